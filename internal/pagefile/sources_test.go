package pagefile

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A list carries what each page is watched through, in CSV and OPML, and
// refuses a source it does not know with the row's line.
func TestListsCarrySources(t *testing.T) {
	pages := []watch.Page{
		{ID: 1, BaseURL: "https://zeitung.example/", Interval: time.Minute, Enabled: true, Sources: []string{"homepage", "feeds", "sitemaps"}},
		{ID: 2, BaseURL: "https://blatt.example/", Interval: time.Minute, Enabled: true, Sources: []string{"homepage"}},
	}
	for _, format := range []string{CSV, OPML} {
		var b bytes.Buffer
		if err := Write(&b, format, pages); err != nil {
			t.Fatal(err)
		}
		rows, err := Read(&b, format)
		if err != nil || len(rows) != 2 || rows[0].Err != nil || rows[1].Err != nil {
			t.Fatalf("%s read back: %+v, %v", format, rows, err)
		}
		if got := strings.Join(rows[0].Page.Sources, ","); got != "homepage,feeds,sitemaps" {
			t.Errorf("%s: the first page's sources read back as %q", format, got)
		}
		if got := strings.Join(rows[1].Page.Sources, ","); got != "" && got != "homepage" {
			t.Errorf("%s: the second page's sources read back as %q", format, got)
		}
		packed := pack(1, rows[0].Page).unpack()
		if got := strings.Join(packed.Sources, ","); got != "homepage,feeds,sitemaps" {
			t.Errorf("%s: packed and unpacked, sources %q", format, got)
		}
	}
	rows, err := Read(strings.NewReader("url,sources\nhttps://a.example/,homepage feeds\nhttps://b.example/,\"homepage,podcasts\"\n"), CSV)
	if err != nil || len(rows) != 2 || rows[0].Err != nil || strings.Join(rows[0].Page.Sources, ",") != "homepage,feeds" {
		t.Fatalf("a list with sources: %+v, %v", rows, err)
	}
	if rows[1].Err == nil || !strings.Contains(rows[1].Err.Error(), "podcasts") {
		t.Fatalf("an unknown source: %+v; want the row refused naming it", rows[1])
	}
}
