package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A page registered with render keeps it and its selector; an edit turns
// it off or on and forgets the validators and body digest, since the DOM
// after scripts and the page as fetched are other bodies; an edit of
// something else leaves both alone; a restore from the trash takes the
// settings given now.
func TestRenderSettingsAreStoredAndEdited(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://scripted.example/", Render: true, WaitFor: "#news a"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Render || p.WaitFor != "#news a" {
		t.Fatalf("created %+v; want render with its selector", p)
	}
	if _, err := pool.Exec(ctx, `UPDATE pages SET etag = 'e1', body_digest = 'd1' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	name := "Scripted"
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Name: &name}); err != nil || !p.Render || p.WaitFor != "#news a" {
		t.Fatalf("after a name edit: %+v, %v; want render kept", p, err)
	}
	allow := []string{"cdn.example.net", "api.example.org:8443"}
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{RenderAllow: &allow}); err != nil || !slices.Equal(p.RenderAllow, allow) || !p.Render {
		t.Fatalf("after allowing hosts: %+v, %v", p.RenderAllow, err)
	}
	if got, err := st.Page(ctx, p.ID); err != nil || !slices.Equal(got.RenderAllow, allow) {
		t.Fatalf("read back: %q, %v", got.RenderAllow, err)
	}
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Name: &name}); err != nil || !slices.Equal(p.RenderAllow, allow) {
		t.Fatalf("after a name edit: %q, %v; want the hosts kept", p.RenderAllow, err)
	}
	cleared := []string{}
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{RenderAllow: &cleared}); err != nil || p.RenderAllow != nil {
		t.Fatalf("after clearing the hosts: %q, %v", p.RenderAllow, err)
	}
	off, none := false, ""
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Render: &off, WaitFor: &none}); err != nil || p.Render || p.WaitFor != "" {
		t.Fatalf("after render off: %+v, %v", p, err)
	}
	var etag, digest *string
	if err := pool.QueryRow(ctx, `SELECT etag, body_digest FROM pages WHERE id = $1`, p.ID).Scan(&etag, &digest); err != nil {
		t.Fatal(err)
	}
	if etag != nil || digest != nil {
		t.Errorf("etag %v, body digest %v after render was turned off; want both cleared", etag, digest)
	}
	if _, err := st.TrashPage(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	p, err = st.CreatePage(ctx, watch.PageSpec{URL: "https://scripted.example/", Render: true, RenderAllow: []string{"cdn.example.net"}})
	if err != nil || !p.Restored || !p.Render || p.WaitFor != "" || !slices.Equal(p.RenderAllow, []string{"cdn.example.net"}) {
		t.Fatalf("restored %+v, %v; want it restored with render on and no selector", p, err)
	}
}

// A check's render hint is recorded when it is the page's last check and
// kept by a check without one; a stale redelivery changes nothing.
func TestRenderHintFollowsTheLastCheck(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://spa.example/"})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	first := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	record := func(at time.Time, hint *bool) watch.Page {
		t.Helper()
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: at, Status: 200, FullSet: true, RenderHint: hint}, nil); err != nil {
			t.Fatal(err)
		}
		page, err := st.Page(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	if got := record(first, &yes); !got.RenderHint || !got.SuggestRender() {
		t.Fatalf("after a scripted check: hint %t, suggest %t; want both", got.RenderHint, got.SuggestRender())
	}
	if got := record(first.Add(-time.Second), &no); !got.RenderHint {
		t.Error("a stale check cleared the hint")
	}
	if got := record(first.Add(time.Second), nil); !got.RenderHint {
		t.Error("a check without a reading cleared the hint")
	}
	if got := record(first.Add(2*time.Second), &no); got.RenderHint {
		t.Error("a later check with links kept the hint")
	}
}

// Turning rendering on or off re-baselines a page with a baseline, since
// the links a script inserts were on the page all along; so do a new
// selector and a new list of allowed hosts of a rendered page. A page without a baseline, a selector of a
// page not rendered and an edit of something else re-baseline nothing.
func TestRenderChangeRebaselines(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://spa.example/"})
	if err != nil {
		t.Fatal(err)
	}
	on, off, sel := true, false, "#news a"
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Render: &on}); err != nil || p.RebaselinePending {
		t.Fatalf("render on before any baseline: rebaseline %t, %v; want none", p.RebaselinePending, err)
	}
	checked := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE pages SET baseline_at = now(), rebaseline = false, links_digest = 'l1', kept_counts = '{3,4}'
			WHERE id = $1`, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(step string, want bool) {
		t.Helper()
		var rebase, digestKept, countsKept bool
		if err := pool.QueryRow(ctx, `SELECT rebaseline, links_digest IS NOT NULL, cardinality(kept_counts) > 0 FROM pages WHERE id = $1`,
			p.ID).Scan(&rebase, &digestKept, &countsKept); err != nil {
			t.Fatal(err)
		}
		if rebase != want || digestKept == want || countsKept == want {
			t.Errorf("%s: rebaseline %t, links digest kept %t, kept counts kept %t; want a re-baseline %t", step, rebase, digestKept, countsKept, want)
		}
	}
	checked()
	name := "SPA"
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{Name: &name, Render: &on}); err != nil {
		t.Fatal(err)
	}
	pending("render on again", false)
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{WaitFor: &sel}); err != nil {
		t.Fatal(err)
	}
	pending("a selector of a rendered page", true)
	checked()
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{WaitFor: &sel}); err != nil {
		t.Fatal(err)
	}
	pending("the same selector again", false)
	allow := []string{"cdn.example"}
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{RenderAllow: &allow}); err != nil {
		t.Fatal(err)
	}
	pending("a new allow list of a rendered page", true)
	checked()
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{RenderAllow: &allow}); err != nil {
		t.Fatal(err)
	}
	pending("the same allow list again", false)
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Render: &off}); err != nil || !p.RebaselinePending {
		t.Fatalf("render off: rebaseline %t, %v; want it", p.RebaselinePending, err)
	}
	checked()
	none := ""
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{WaitFor: &none}); err != nil {
		t.Fatal(err)
	}
	pending("a selector of a page not rendered", false)
}
