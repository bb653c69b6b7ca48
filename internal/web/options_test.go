package web

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestAPIPageRegionsAndKeywordRules(t *testing.T) {
	e := newEnv(t)
	w := e.writeTk
	for _, tt := range []struct {
		body, field, why string
	}{
		{`{"url":"http://127.0.0.1:9/","within":["div:has(a)"]}`, "within", ":has"},
		{`{"url":"http://127.0.0.1:9/","exclude_url":["("]}`, "excludeUrl", "missing closing"},
	} {
		resp, b := e.do("POST", "/api/v1/pages", w, tt.body)
		p := decode[problemDetails](t, b)
		if resp.StatusCode != 422 || !strings.Contains(p.Detail, tt.why) || len(p.Errors) != 1 || p.Errors[0].Field != tt.field {
			t.Errorf("POST %s: %d %+v; want 422 naming %q (%s)", tt.body, resp.StatusCode, p, tt.field, tt.why)
		}
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("refused requests wrote %d pages", n)
	}

	resp, b := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/","within":["#latest-news"],"exclude":["nav","footer"],`+
		`"include_text":["florenz"],"exclude_url":["\\?ticker="],"burst_detection":false}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	p := decode[pageJSON](t, b)
	if !slices.Equal(p.Within, []string{"#latest-news"}) || !slices.Equal(p.Exclude, []string{"nav", "footer"}) ||
		!slices.Equal(p.IncludeText, []string{"florenz"}) || !slices.Equal(p.ExcludeURL, []string{`\?ticker=`}) || p.BurstDetection {
		t.Fatalf("created %+v", p)
	}

	path := fmt.Sprintf("/api/v1/pages/%d", p.ID)
	// Ten selectors are the most a page has across within and exclude: a
	// change is checked against the lists as they will be stored.
	resp, b = e.do("PATCH", path, w, `{"within":["a","b","c","d","e","f","g","h","i"]}`)
	if pd := decode[problemDetails](t, b); resp.StatusCode != 422 || len(pd.Errors) != 1 || pd.Errors[0].Field != "options" {
		t.Fatalf("PATCH over the selector cap: %d %+v, want 422 naming options", resp.StatusCode, pd)
	}
	resp, b = e.do("PATCH", path, w, `{"within":[],"include_url":["/politik/"]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, b)
	}
	p = decode[pageJSON](t, b)
	if len(p.Within) != 0 || !slices.Equal(p.IncludeURL, []string{"/politik/"}) || !slices.Equal(p.Exclude, []string{"nav", "footer"}) {
		t.Fatalf("patched %+v", p)
	}
}

func TestAPIRemovalsAndUpdatesSummaryAndBurst(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	page, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200},
		[]watch.NewLink{{Key: 1, URL: "https://zeitung.example/alt", Text: "Alt", Code: "c1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Second), Status: 200},
		[]watch.NewLink{{Key: 2, URL: "https://zeitung.example/neu", Text: "Neu", Code: "c2", Summary: "Teaser"}}); err != nil {
		t.Fatal(err)
	}
	resp, b := e.do("GET", "/api/v1/updates", e.readTok, "")
	ups := decode[struct{ Updates []watch.Update }](t, b)
	if resp.StatusCode != 200 || len(ups.Updates) != 1 || ups.Updates[0].Summary != "Teaser" || ups.Updates[0].Burst {
		t.Fatalf("updates: %d %s", resp.StatusCode, b)
	}

	// The page is followed from the next whole check on; the one after it
	// lacks /alt, which K = 1 makes due at once, and the processor records.
	tracked := func(at time.Time, keys ...uint64) {
		t.Helper()
		c := watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true, Removals: watch.Removals{Checks: 1, Keys: keys}}
		if _, err := e.st.RecordCheck(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	tracked(at.Add(2*time.Second), 1, 2)
	tracked(at.Add(3*time.Second), 2)
	if _, err := e.st.RecordRemovals(ctx, []int64{page.ID}); err != nil { // as the processor does after its checks
		t.Fatal(err)
	}
	resp, b = e.do("GET", fmt.Sprintf("/api/v1/removals?page=%d", page.ID), e.readTok, "")
	rs := decode[struct{ Removals []removalJSON }](t, b)
	if resp.StatusCode != 200 || len(rs.Removals) != 1 || rs.Removals[0].URL != "https://zeitung.example/alt" {
		t.Fatalf("removals: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("GET", "/api/v1/removals?tag=news", e.readTok, ""); resp.StatusCode != 400 {
		t.Fatalf("removals with a tag filter: %d, want 400", resp.StatusCode)
	}
}

// TestAPIPageArticles: a page created through the API reads articles
// unless "articles": false, and PATCH turns them on and off.
func TestAPIPageArticles(t *testing.T) {
	e := newEnv(t)
	w := e.writeTk
	_, b := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/a"}`)
	if p := decode[pageJSON](t, b); !p.Articles {
		t.Errorf("a page created without articles: %s, want articles on", b)
	}
	resp, b := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/b","articles":false}`)
	p := decode[pageJSON](t, b)
	if resp.StatusCode != 201 || p.Articles {
		t.Fatalf("create with articles false: %d %s", resp.StatusCode, b)
	}
	path := fmt.Sprintf("/api/v1/pages/%d", p.ID)
	resp, b = e.do("PATCH", path, w, `{"articles":true}`)
	if p = decode[pageJSON](t, b); resp.StatusCode != 200 || !p.Articles || p.RebaselinePending {
		t.Errorf("PATCH articles true: %d %s", resp.StatusCode, b)
	}
	if _, b = e.do("GET", path, e.readTok, ""); !decode[pageJSON](t, b).Articles {
		t.Errorf("GET after PATCH: %s, want articles on", b)
	}
	if resp, b = e.do("PATCH", path, w, `{}`); resp.StatusCode != 400 || !strings.Contains(string(b), "articles") {
		t.Errorf("an empty PATCH: %d %s, want 400 naming articles among the fields", resp.StatusCode, b)
	}
}
