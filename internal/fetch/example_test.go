package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/portalwatch/portalwatch/internal/fetch"
)

func ExampleDecodeHTML() {
	gbk, _ := simplifiedchinese.GBK.NewEncoder().String(`<meta charset="gb2312"><title>新闻首页</title>`)
	html, charset := fetch.DecodeHTML([]byte(gbk), "text/html")
	fmt.Println(charset)
	fmt.Println(string(html))

	// A page that declares gb2312 but is really UTF-8 is read as UTF-8.
	html, charset = fetch.DecodeHTML([]byte(`<meta charset="gb2312"><title>新闻首页</title>`), "")
	fmt.Println(charset, string(html))
	// Output:
	// gb18030
	// <meta charset="gb2312"><title>新闻首页</title>
	// utf-8 <meta charset="gb2312"><title>新闻首页</title>
}

func ExampleCheckURL() {
	ctx := context.Background()
	for _, u := range []string{
		"https://93.184.216.34/",
		"http://0x7f.1:8080/",
		"http://app.localhost/",
		"file:///etc/passwd",
	} {
		err := fetch.CheckURL(ctx, u, false, nil)
		fmt.Printf("%v (kind %v)\n", err, fetch.KindOf(err))
	}
	// Output:
	// <nil> (kind unknown)
	// http://0x7f.1:8080/: resolves to 127.0.0.1, a loopback address; set PORTALWATCH_ALLOW_PRIVATE=true to allow private addresses (kind blocked)
	// http://app.localhost/: app.localhost is a localhost name, which always means this machine; set PORTALWATCH_ALLOW_PRIVATE=true to allow private addresses (kind blocked)
	// file:///etc/passwd: scheme "file" is not allowed; only http and https are (kind bad_url)
}

func ExampleClient_Fetch() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<a href="/news/1">First story</a>`)
	}))
	defer srv.Close()

	// AllowPrivate only because the test server listens on loopback.
	c, err := fetch.New(fetch.Config{AllowPrivate: true, MaxRedirects: fetch.DefaultMaxRedirects})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()

	res, err := c.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/"})
	fmt.Println(res.Status, res.Charset, string(res.HTML), err)

	res, err = c.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/gone"})
	var fe *fetch.Error
	if errors.As(err, &fe) {
		fmt.Println(res.Status, fe.Kind, fe.Status)
	}
	// Output:
	// 200 utf-8 <a href="/news/1">First story</a> <nil>
	// 404 http_status 404
}
