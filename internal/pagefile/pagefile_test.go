package pagefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestFormatOf(t *testing.T) {
	for name, want := range map[string]string{"a.csv": CSV, "A.CSV": CSV, "feeds.opml": OPML, "x.xml": OPML, "list.txt": ""} {
		got, err := FormatOf(name)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestReadCSV(t *testing.T) {
	rows, err := Read(strings.NewReader("URL,Tags,Interval,Enabled,Ignore\n"+
		"https://a.example/,x y,1m,false,\"a\nb\"\n"+
		"https://b.example/,,,,\n"+
		"https://c.example/,,soon,,\n"+
		"https://d.example/,,,maybe,\n"+
		",,,,\n"), CSV)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
	a := rows[0]
	if a.Line != 2 || a.Err != nil || !a.Page.Paused || a.Page.Interval != time.Minute || strings.Join(a.Page.Tags, ",") != "x,y" || len(a.Page.Options.Ignore) != 2 {
		t.Errorf("row a: %+v", a)
	}
	if b := rows[1]; b.Err != nil || b.Page.Paused || b.Page.Interval != watch.DefaultInterval {
		t.Errorf("row b takes the defaults: %+v", b)
	}
	for i, want := range map[int]string{2: `interval "soon"`, 3: `enabled "maybe"`, 4: "no url"} {
		if rows[i].Err == nil || !strings.Contains(rows[i].Err.Error(), want) {
			t.Errorf("row %d: error %v, want %q", rows[i].Line, rows[i].Err, want)
		}
	}
	if rows[2].Line != 5 {
		t.Errorf("a row spanning two lines moved the next row's number: %d, want 5", rows[2].Line)
	}
	for _, bad := range []string{"", "name\nx\n", "url\n\"unterminated\n"} {
		if _, err := Read(strings.NewReader(bad), CSV); err == nil {
			t.Errorf("Read(%q) succeeded", bad)
		}
	}
}

func TestReadRefusesListsOverTheBounds(t *testing.T) {
	var many strings.Builder
	many.WriteString("url\n")
	for i := range MaxRows + 1 {
		fmt.Fprintf(&many, "https://p%d.example/\n", i)
	}
	if _, err := Read(strings.NewReader(many.String()), CSV); err == nil || !strings.Contains(err.Error(), "at most 10000") {
		t.Errorf("%d rows: %v, want refused", MaxRows+1, err)
	}
	big := "url\nhttps://a.example/" + strings.Repeat("x", MaxBytes) + "\n"
	if _, err := Read(strings.NewReader(big), CSV); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a list over %d bytes: %v, want refused", MaxBytes, err)
	}
}

func TestOPMLRoundTrip(t *testing.T) {
	pages := []watch.Page{
		{BaseURL: "https://a.example/", Name: "A & B", Tags: []string{"x", "y"}, Interval: time.Minute, Enabled: true,
			Options: watch.LinkOptions{SameSiteOnly: true, Ignore: []string{`\?page=\d+`, "b"}}, BurstDetection: true, Articles: true},
		{BaseURL: "https://c.example/", Interval: watch.DefaultInterval, Enabled: false, BurstDetection: true, Render: true},
		{BaseURL: "https://e.example/", Interval: watch.DefaultInterval, Enabled: true, Render: true, WaitFor: `#news a[href^="/2026"]`,
			RenderAllow: []string{"cdn.example.net", "api.example.org:8443"}},
		{BaseURL: "https://d.example/", Interval: time.Hour, Enabled: true, Options: watch.LinkOptions{
			Within: []string{"#latest-news", `main .teasers > a[href*="/2026/"]`}, Exclude: []string{"nav, footer", ".ad-rail"},
			IncludeText: []string{"florenz|rom", "über"}, ExcludeText: []string{"anzeige"},
			IncludeURL: []string{"/politik/"}, ExcludeURL: []string{`\?ticker=`, `&utm_[a-z]+=`}}},
	}
	for _, format := range []string{CSV, OPML} {
		var buf bytes.Buffer
		if err := Write(&buf, format, pages); err != nil {
			t.Fatal(err)
		}
		rows, err := Read(&buf, format)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, buf.String())
		}
		for i, p := range pages {
			r := rows[i]
			if r.Err != nil || r.Page.URL != p.BaseURL || r.Page.Name != p.Name || strings.Join(r.Page.Tags, ",") != strings.Join(p.Tags, ",") ||
				r.Page.Interval != p.Interval || r.Page.Paused == p.Enabled || r.Page.Options.SameSiteOnly != p.Options.SameSiteOnly ||
				!reflect.DeepEqual(r.Page.Options, p.Options) || r.Page.BurstDetectionOff == p.BurstDetection ||
				r.Page.ArticlesOff == p.Articles || r.Page.Render != p.Render || r.Page.WaitFor != p.WaitFor ||
				!slices.Equal(r.Page.RenderAllow, p.RenderAllow) {
				t.Errorf("%s round trip of %+v gave %+v", format, p, r)
			}
		}
	}
}

func TestCheckNamesEveryBadRow(t *testing.T) {
	rows := []Row{
		{Line: 2, Page: watch.PageSpec{URL: "http://127.0.0.1:9/a", Interval: time.Minute}},
		{Line: 3, Err: errors.New("interval \"soon\": want a duration")},
		{Line: 4, Page: watch.PageSpec{URL: "HTTP://127.0.0.1:9/a", Interval: time.Minute}},
		{Line: 5, Page: watch.PageSpec{URL: "http://127.0.0.1:9/old", Interval: time.Minute}},
		{Line: 6, Page: watch.PageSpec{URL: "http://127.0.0.1:9/t", Interval: time.Minute, Tags: []string{"no/slash"}}},
		{Line: 7, Page: watch.PageSpec{URL: "http://127.0.0.1:9/ok", Interval: time.Minute, Paused: true}},
	}
	pol := registration.Policy{GuardURL: fetch.Guard(true, nil)}
	_, err := Check(context.Background(), pol, rows, func(u string) bool { return u == "http://127.0.0.1:9/old" })
	var bad *BadRowsError
	if !errors.As(err, &bad) {
		t.Fatalf("Check: %v, want *BadRowsError", err)
	}
	var lines []int
	for _, r := range bad.Rows {
		lines = append(lines, r.Line)
	}
	if fmt.Sprint(lines) != "[3 4 5 6]" || !strings.Contains(err.Error(), "also on row 2") || !strings.Contains(err.Error(), "already watched") {
		t.Errorf("bad rows %v: %v", lines, err)
	}
	specs, err := Check(context.Background(), pol, []Row{rows[0], rows[5]}, func(string) bool { return false })
	if err != nil || len(specs) != 2 || specs[0].Paused || !specs[1].Paused {
		t.Errorf("good rows: %+v %v", specs, err)
	}
}

// A list written before regions and keyword rules has none of their columns:
// its pages take the defaults, burst detection on. A list written before
// articles has no articles column: its pages read articles, as every page
// registered now does.
func TestReadOlderListsTakeTheDefaults(t *testing.T) {
	for format, list := range map[string]string{
		CSV:  "url,name,tags,interval,enabled,same_site,ignore\nhttps://a.example/,A,,1m,true,false,\n",
		OPML: `<opml version="2.0"><body><outline text="A" type="link" url="https://a.example/"/></body></opml>`,
	} {
		rows, err := Read(strings.NewReader(list), format)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %v %v", format, rows, err)
		}
		o := rows[0].Page.Options
		if rows[0].Page.BurstDetectionOff || rows[0].Page.ArticlesOff || o.Within != nil || o.Exclude != nil || o.IncludeText != nil || o.ExcludeURL != nil {
			t.Errorf("%s: an older list read as %+v, burst detection off %t, articles off %t", format, o,
				rows[0].Page.BurstDetectionOff, rows[0].Page.ArticlesOff)
		}
	}
	rows, err := Read(strings.NewReader("url,burst_detection\nhttps://a.example/,sometimes\n"), CSV)
	if err != nil || rows[0].Err == nil || !strings.Contains(rows[0].Err.Error(), `burst_detection "sometimes"`) {
		t.Errorf("a bad burst_detection: %v %v", rows, err)
	}
	rows, err = Read(strings.NewReader("url,articles\nhttps://a.example/,maybe\n"), CSV)
	if err != nil || rows[0].Err == nil || !strings.Contains(rows[0].Err.Error(), `articles "maybe"`) {
		t.Errorf("a bad articles: %v %v", rows, err)
	}
}

// Check refuses a row whose regions or keyword rules registration refuses,
// naming the row and the list, and carries burst detection and articles
// into the spec.
func TestCheckRefusesBadRegionsAndKeywordRules(t *testing.T) {
	list := "url,within,exclude_url,include_text,burst_detection,articles\n" +
		"http://127.0.0.1:9/a,#latest-news,,,false,false\n" +
		"http://127.0.0.1:9/b,div:has(a),,,,\n" +
		"http://127.0.0.1:9/c,,(,,,\n" +
		"http://127.0.0.1:9/d,,," + strings.Repeat("a", 2000) + ",,\n"
	rows, err := Read(strings.NewReader(list), CSV)
	if err != nil {
		t.Fatal(err)
	}
	pol := registration.Policy{GuardURL: fetch.Guard(true, nil)}
	_, err = Check(context.Background(), pol, rows, func(string) bool { return false })
	var bad *BadRowsError
	if !errors.As(err, &bad) {
		t.Fatalf("Check: %v, want *BadRowsError", err)
	}
	var lines []int
	for _, r := range bad.Rows {
		lines = append(lines, r.Line)
	}
	if fmt.Sprint(lines) != "[3 4 5]" || !strings.Contains(err.Error(), ":has") || !strings.Contains(err.Error(), "missing closing") {
		t.Errorf("bad rows %v: %v", lines, err)
	}
	specs, err := Check(context.Background(), pol, rows[:1], func(string) bool { return false })
	if err != nil || len(specs) != 1 || !specs[0].BurstDetectionOff || !specs[0].ArticlesOff || fmt.Sprint(specs[0].Options.Within) != "[#latest-news]" {
		t.Errorf("a good row: %+v %v", specs, err)
	}
}
