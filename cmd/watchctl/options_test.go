package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
)

func TestAddAndSetRegionsAndKeywordRules(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	ctx := context.Background()

	code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--within", "main:has(a)")
	if code != exitUsage || !strings.Contains(errOut, ":has") {
		t.Fatalf("add with a refused selector: exit %d %q, want 2 naming :has", code, errOut)
	}
	code, out, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--within", "#latest-news", "--exclude", "nav",
		"--exclude", "footer", "--include-text", "florenz", "--exclude-url", `\?ticker=`)
	if code != 0 {
		t.Fatalf("add: exit %d %s%s", code, out, errOut)
	}
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("pages %v %v", pages, err)
	}
	o := pages[0].Options
	if !slices.Equal(o.Within, []string{"#latest-news"}) || !slices.Equal(o.Exclude, []string{"nav", "footer"}) ||
		!slices.Equal(o.IncludeText, []string{"florenz"}) || !slices.Equal(o.ExcludeURL, []string{`\?ticker=`}) {
		t.Fatalf("stored options %+v", o)
	}

	// The page has a baseline: a change of what it admits re-baselines it,
	// and set says so; --within '' clears the regions.
	if _, err := st.RecordCheck(ctx, store.Check{PageID: pages[0].ID, FetchedAt: time.Now(), Status: 200}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, e, "set", "1", "--within", "", "--burst-detection=false")
	if code != 0 || !strings.Contains(out, "re-baselines silently") {
		t.Fatalf("set: exit %d %q %q, want the re-baseline line", code, out, errOut)
	}
	p, err := st.Page(ctx, pages[0].ID)
	if err != nil || len(p.Options.Within) != 0 || p.BurstDetection || !p.RebaselinePending {
		t.Fatalf("after set: %+v %v", p, err)
	}
	code, out, _ = runCLI(t, e, "set", "1", "--name", "Zeitung")
	if code != 0 || strings.Contains(out, "re-baselines") {
		t.Fatalf("set --name: exit %d %q, want no re-baseline line", code, out)
	}
}
