package pagefile

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A list carries the headers in clear, never a secret: an export leaves the
// cookie out, and an import refuses a row that names one.
func TestListsCarryHeadersButNoSecret(t *testing.T) {
	page := watch.Page{ID: 1, BaseURL: "https://zeitung.example/", Interval: time.Minute, Enabled: true,
		Headers: []watch.Header{{Name: "Accept-Language", Value: "de"}, {Name: "Cookie", Sealed: "v1.abcd.c2VhbGVk"}, {Name: "Referer", Value: "https://a.example/"}}}
	for _, format := range []string{CSV, OPML} {
		var b bytes.Buffer
		if err := Write(&b, format, []watch.Page{page}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "Cookie") || strings.Contains(b.String(), "c2VhbGVk") {
			t.Fatalf("%s export names the cookie:\n%s", format, b.String())
		}
		rows, err := Read(&b, format)
		if err != nil || len(rows) != 1 || rows[0].Err != nil {
			t.Fatalf("%s read back: %+v, %v", format, rows, err)
		}
		got := strings.Join(watch.ShownHeaders(rows[0].Page.Headers), "; ")
		if got != "Accept-Language: de; Referer: https://a.example/" {
			t.Errorf("%s headers read back: %q", format, got)
		}
	}
	rows, err := Read(strings.NewReader("url,headers\nhttps://a.example/,\"Accept-Language: de\nCookie: s=1\"\n"), CSV)
	if err != nil || len(rows) != 1 || rows[0].Err == nil || !strings.Contains(rows[0].Err.Error(), "Cookie is a secret") {
		t.Fatalf("a list with a cookie: %+v, %v; want the row refused", rows, err)
	}
}
