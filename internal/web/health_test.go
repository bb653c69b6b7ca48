package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A degraded page shows its reason in the API (with the health filter),
// in the pages list (a badge, a count, the status filter) and on its view.
func TestDegradedPageShowsEverywhere(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	healthy, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "http://127.0.0.1:9/healthy"})
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "http://127.0.0.1:9/blocked"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: blocked.ID, FetchedAt: at, Status: 403, Error: "HTTP 403"}, nil); err != nil {
		t.Fatal(err)
	}

	_, b := e.do("GET", "/api/v1/pages", e.readTok, "")
	pages := decode[struct{ Pages []pageJSON }](t, b).Pages
	if len(pages) != 2 || pages[0].Health != (healthJSON{Status: "ok"}) {
		t.Fatalf("pages %+v: want two, the first ok", pages)
	}
	h := pages[1].Health
	if h.Status != "degraded" || h.Reason != "blocked" || h.Detail != "the page answered 403 Forbidden" || h.Since == nil || !h.Since.Equal(at.UTC().Truncate(time.Microsecond)) {
		t.Fatalf("blocked page health %+v, want blocked since %s", h, at)
	}
	for filter, want := range map[string]int64{"degraded": blocked.ID, "ok": healthy.ID} {
		_, b = e.do("GET", "/api/v1/pages?health="+filter, e.readTok, "")
		if got := decode[struct{ Pages []pageJSON }](t, b).Pages; len(got) != 1 || got[0].ID != want {
			t.Errorf("health=%s: %+v, want page %d alone", filter, got, want)
		}
	}
	resp, b := e.do("GET", "/api/v1/pages?health=sick", e.readTok, "")
	if p := decode[problemDetails](t, b); resp.StatusCode != 400 || !strings.Contains(p.Detail, "want ok or degraded") {
		t.Errorf("health=sick: %d %+v, want 400 saying what is wanted", resp.StatusCode, p)
	}

	_, body := e.get("/pages", e.readTok)
	if !strings.Contains(body, `href="/pages?status=degraded" class="bad">1 degraded</a>`) ||
		!strings.Contains(body, `<span class="badge degraded">blocked</span> the page answered 403 Forbidden`) {
		t.Errorf("the pages list shows no degraded count or badge:\n%s", body)
	}
	_, body = e.get("/pages?status=degraded", e.readTok)
	if !strings.Contains(body, "/pages/"+fmt.Sprint(blocked.ID)) || strings.Contains(body, `href="/pages/`+fmt.Sprint(healthy.ID)+`"`) {
		t.Errorf("status=degraded lists other pages than the blocked one:\n%s", body)
	}
	_, body = e.get(fmt.Sprintf("/pages/%d", blocked.ID), e.readTok)
	if !strings.Contains(body, `<span class="badge degraded">degraded: blocked</span>`) || !strings.Contains(body, `id="degraded"`) ||
		!strings.Contains(body, "the page answered 403 Forbidden") {
		t.Errorf("the page view shows no health:\n%s", body)
	}
	_, body = e.get(fmt.Sprintf("/pages/%d", healthy.ID), e.readTok)
	if !strings.Contains(body, `<dd class="health">ok</dd>`) || strings.Contains(body, `id="degraded"`) {
		t.Errorf("the healthy page view:\n%s", body)
	}
}
