package main

import (
	"context"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// --sources on add and set: checked with a message that says what to
// type, shown by add, set, list and export; watchctl sources lists a
// page's feeds and sitemaps with their state.
func TestSourcesFromTheCommandLine(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--sources", "homepage,podcasts"); code != exitUsage ||
		!strings.Contains(errOut, `unknown source "podcasts"`) || !strings.Contains(errOut, "homepage,feeds,sitemaps") {
		t.Fatalf("add with an unknown source: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--sources", "feeds"); code != exitUsage ||
		!strings.Contains(errOut, "must include homepage") {
		t.Fatalf("add without the homepage: exit %d %q", code, errOut)
	}
	code, out, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--sources", "homepage, feeds")
	if code != exitOK || !strings.Contains(out, "sources homepage,feeds") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, e, "sources", "1"); code != exitOK || !strings.Contains(out, "no feed or news sitemap found yet") {
		t.Fatalf("sources before a discovery: exit %d %q", code, out)
	}
	if err := st.RecordDiscovery(context.Background(), 1, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/rss", Title: "Top stories"}}, ""); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, e, "sources", "1")
	if code != exitOK || !strings.Contains(out, "http://127.0.0.1:9/rss") || !strings.Contains(out, "pending") || !strings.Contains(out, "Top stories") {
		t.Fatalf("sources: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, e, "sources", "1", "--json"); code != exitOK || !strings.Contains(out, `"status":"pending"`) {
		t.Fatalf("sources --json: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "sources", "opml"); code != exitOK || !strings.Contains(out, `<outline text="127.0.0.1:9 — Top stories"`) ||
		!strings.Contains(out, `xmlUrl="http://127.0.0.1:9/rss"`) {
		t.Fatalf("sources opml: exit %d %q", code, out)
	}
	if code, out, errOut := runCLI(t, e, "sources", "opml", "--tag", "nothing"); code != exitOK || strings.Contains(out, "<outline") ||
		!strings.Contains(errOut, "no feed found") {
		t.Fatalf("sources opml of a tag no page has: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, e, "set", "1", "--sources", "homepage,sitemaps"); code != exitOK || !strings.Contains(out, "sources homepage,sitemaps") {
		t.Fatalf("set: exit %d %q", code, out)
	}
	for args, want := range map[string]string{"list": "homepage,sitemaps", "list --json": `"sources":["homepage","sitemaps"]`, "export": "homepage,sitemaps"} {
		if code, out, _ := runCLI(t, e, strings.Fields(args)...); code != exitOK || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, want %q in\n%s", args, code, want, out)
		}
	}
	if code, out, _ := runCLI(t, e, "sources", "1"); code != exitOK || !strings.Contains(out, "not_chosen") {
		t.Fatalf("the feed of a page that no longer chooses feeds: exit %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, e, "sources", "7"); code != exitUsage || !strings.Contains(errOut, "no page has id 7") {
		t.Fatalf("sources of no page: exit %d %q", code, errOut)
	}
}

// watchctl sources set gives a source its own interval, or its page's
// again; the list shows which; bad input says what to type.
func TestSourceIntervalFromTheCommandLine(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--sources", "homepage,feeds", "--interval", "10m"); code != exitOK {
		t.Fatalf("add: exit %d %q", code, errOut)
	}
	if err := st.RecordDiscovery(context.Background(), 1, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/rss"}}, ""); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, e, "sources", "1"); code != exitOK || !strings.Contains(out, "EVERY") || !strings.Contains(out, "10m (page)") {
		t.Fatalf("sources: exit %d %q; want the page's 10m", code, out)
	}
	code, out, errOut := runCLI(t, e, "sources", "set", "1", "--interval", "2m")
	if code != exitOK || !strings.Contains(out, "source 1 of page 1") || !strings.Contains(out, "checked every 2m;") {
		t.Fatalf("sources set --interval 2m: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, e, "sources", "list", "1", "--json"); code != exitOK ||
		!strings.Contains(out, `"interval":"2m0s","interval_seconds":120,"interval_follows_page":false`) {
		t.Fatalf("sources list --json: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "sources", "set", "1", "--interval", "page"); code != exitOK || !strings.Contains(out, "every 10m, its page's interval") {
		t.Fatalf("sources set --interval page: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "sources", "set", "1", "--paused=true"); code != exitOK || !strings.Contains(out, "paused, not checked until") {
		t.Fatalf("sources set --paused=true: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "sources", "1"); code != exitOK || !strings.Contains(out, "paused") {
		t.Fatalf("sources of a page with a paused feed: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "sources", "set", "1", "--paused=false"); code != exitOK || !strings.Contains(out, "silent baseline") {
		t.Fatalf("sources set --paused=false: exit %d %q", code, out)
	}
	for _, c := range []struct{ args, want string }{
		{"sources set 1 --interval 5s", "the shortest is 10s; or \"page\""},
		{"sources set 1 --interval often", "is not a duration"},
		{"sources set 1", "give --interval, --paused or both"},
		{"sources set 9 --interval 1m", "no source has id 9"},
	} {
		if code, _, errOut := runCLI(t, e, strings.Fields(c.args)...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d %q; want a usage error with %q", c.args, code, errOut, c.want)
		}
	}
}
