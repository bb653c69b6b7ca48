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
