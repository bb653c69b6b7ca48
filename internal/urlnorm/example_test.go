package urlnorm_test

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/portalwatch/portalwatch/internal/urlnorm"
)

func ExampleResolve() {
	page, _ := url.Parse("https://www.example.com/news/today.html")
	for _, href := range []string{
		"story.html?utm_source=home&id=7#comments",
		"../Sport/?b=2&a=1",
		"//Bücher.example:443/katalog",
		"javascript:void(0)",
		"#top",
	} {
		u, err := urlnorm.Resolve(page, href)
		switch {
		case errors.Is(err, urlnorm.ErrNotHTTP), errors.Is(err, urlnorm.ErrFragmentOnly):
			fmt.Printf("%-45q skipped: %v\n", href, err)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%-45q %s\n", href, u)
		}
	}
	// Output:
	// "story.html?utm_source=home&id=7#comments"    https://www.example.com/news/story.html?id=7
	// "../Sport/?b=2&a=1"                           https://www.example.com/Sport/?a=1&b=2
	// "//Bücher.example:443/katalog"                https://xn--bcher-kva.example/katalog
	// "javascript:void(0)"                          skipped: urlnorm: not an http or https URL "javascript:void(0)": only http and https links are kept
	// "#top"                                        skipped: urlnorm: fragment-only URL "#top": a fragment-only link points within the page
}

func ExampleNormalize() {
	u, err := urlnorm.Normalize("HTTP://User@Example.COM:80/a/./b/../c;jsessionid=0A1B?PHPSESSID=x&q=caf%c3%a9&%7Euser=1")
	fmt.Println(u, err)
	_, err = urlnorm.Normalize("example.com/page")
	fmt.Println(err)
	// Output:
	// http://example.com/a/c?q=caf%C3%A9&~user=1 <nil>
	// urlnorm: invalid URL "example.com/page": no scheme; write the URL with http:// or https://
}

func ExampleSameSite() {
	fmt.Println(urlnorm.SameSite("www.example.com", "https://news.example.com/a"))
	fmt.Println(urlnorm.SameSite("www.example.com", "https://example.org/"))
	// Output:
	// true
	// false
}
