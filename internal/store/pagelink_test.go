package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// pageLinks reads the whole list of state of page, limit links a call,
// and fails the test on an error.
func pageLinks(t *testing.T, st *store.Store, page int64, state watch.LinkState, limit int) []watch.PageLink {
	t.Helper()
	var all []watch.PageLink
	f := watch.LinkFilter{PageID: page, State: state, Limit: limit}
	for range 1000 {
		got, err := st.PageLinks(context.Background(), f)
		if err != nil {
			t.Fatalf("%s links of page %d after %+v: %v", state, page, f.After, err)
		}
		all = append(all, got...)
		if len(got) < limit {
			return all
		}
		f.After = got[len(got)-1].Cursor
	}
	t.Fatalf("%s links of page %d: no end after 1000 calls", state, page)
	return nil
}

// urlsOf is the URLs of links in their order.
func urlsOf(ls []watch.PageLink) string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.URL)
	}
	return fmt.Sprint(out)
}

// TestPageLinksFollowTheStories follows stories on and off a page: the
// current links are the page's last whole check, newest first; a removed
// link shows its time on the page to the second; a link that comes back is
// current again, in neither list while it is away again unrecorded, and
// then removed once, measured from its first sighting.
func TestPageLinksFollowTheStories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newStoryPage(t, "dwell")
	p.show(0, 1, 2)
	p.check(nil) // baseline: followed from here
	p.show(3)
	p.check(nil)
	cur := pageLinks(t, p.st, p.page.ID, watch.LinksCurrent, 100)
	if len(cur) != 4 || cur[0].URL != p.url(3) {
		t.Fatalf("current links %s, want 4 with the newest, story 3, first", urlsOf(cur))
	}
	for _, l := range cur {
		if l.RemovedAt != nil || l.FirstSeenAt == nil || l.LastSeenAt == nil || l.DwellSeconds == nil || *l.DwellSeconds > 60 {
			t.Fatalf("current link %+v: want first and last seen, no removal, and a dwell so far of under a minute", l)
		}
		if l.Text != "text of "+l.URL || l.Code == "" {
			t.Fatalf("current link %+v: want its text and code", l)
		}
	}
	if got := pageLinks(t, p.st, p.page.ID, watch.LinksRemoved, 100); len(got) != 0 {
		t.Fatalf("removed links before any left: %s", urlsOf(got))
	}

	// Story 1 leaves: pending after one check, removed after two.
	p.hide(1)
	p.check(nil)
	if got := urlsOf(pageLinks(t, p.st, p.page.ID, watch.LinksRemoved, 100)); got != "[]" {
		t.Fatalf("removed links while story 1 is pending: %s", got)
	}
	if got := pageLinks(t, p.st, p.page.ID, watch.LinksCurrent, 100); len(got) != 3 || slices.ContainsFunc(got, func(l watch.PageLink) bool { return l.URL == p.url(1) }) {
		t.Fatalf("current links while story 1 is pending: %s, want it gone", urlsOf(got))
	}
	if got, want := p.check(nil), p.removedURLs(1); got != want {
		t.Fatalf("story 1 absent twice: removed %s, want %s", got, want)
	}
	// Its times made exact, to count its dwell to the second.
	first := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	removed := first.Add(3*time.Hour + 20*time.Minute + 7*time.Second)
	setTimes := func(first, removed time.Time) {
		t.Helper()
		key := int64(links(p.url(1))[0].Key)
		if _, err := p.pool.Exec(ctx, `UPDATE links SET first_seen_at = $3 WHERE page_id = $1 AND link_key = $2`, p.page.ID, key, first); err != nil {
			t.Fatal(err)
		}
		if _, err := p.pool.Exec(ctx, `UPDATE removals SET removed_at = $3 WHERE page_id = $1 AND link_key = $2
			AND id = (SELECT max(id) FROM removals WHERE page_id = $1 AND link_key = $2)`, p.page.ID, key, removed); err != nil {
			t.Fatal(err)
		}
	}
	setTimes(first, removed)
	gone := pageLinks(t, p.st, p.page.ID, watch.LinksRemoved, 100)
	if len(gone) != 1 || gone[0].URL != p.url(1) || gone[0].RemovedAt == nil || !gone[0].RemovedAt.Equal(removed) ||
		!gone[0].FirstSeenAt.Equal(first) || gone[0].DwellSeconds == nil || *gone[0].DwellSeconds != 3*3600+20*60+7 {
		t.Fatalf("removed links %+v, want story 1 removed at %s after 12007 s on the page", gone, removed)
	}
	if got := urlsOf(pageLinks(t, p.st, p.page.ID, watch.LinksCurrent, 100)); got != fmt.Sprint([]string{p.url(3), p.url(2), p.url(0)}) &&
		got != fmt.Sprint([]string{p.url(3), p.url(0), p.url(2)}) {
		t.Fatalf("current links after story 1 was removed: %s, want 3 first, then 0 and 2", got)
	}

	// It comes back: current again, its time so far counted from its
	// first sighting, and no longer removed.
	p.show(1)
	p.check(nil)
	back := pageLinks(t, p.st, p.page.ID, watch.LinksCurrent, 100)
	i := slices.IndexFunc(back, func(l watch.PageLink) bool { return l.URL == p.url(1) })
	if i < 0 || back[i].DwellSeconds == nil || time.Duration(*back[i].DwellSeconds)*time.Second < time.Since(first)-time.Minute {
		t.Fatalf("story 1 back: current links %+v, want it with a dwell so far from %s", back, first)
	}
	if i != len(back)-1 {
		t.Fatalf("story 1 back: current links %s, want it last (first seen before the others)", urlsOf(back))
	}
	if got := urlsOf(pageLinks(t, p.st, p.page.ID, watch.LinksRemoved, 100)); got != "[]" {
		t.Fatalf("removed links with story 1 back: %s, want none", got)
	}

	// It leaves again: in neither list while pending, then removed once,
	// with its latest removal.
	p.hide(1)
	p.check(nil)
	for _, state := range []watch.LinkState{watch.LinksCurrent, watch.LinksRemoved} {
		if got := pageLinks(t, p.st, p.page.ID, state, 100); slices.ContainsFunc(got, func(l watch.PageLink) bool { return l.URL == p.url(1) }) {
			t.Fatalf("story 1 left again, not yet recorded, is among the %s links: %s", state, urlsOf(got))
		}
	}
	if got, want := p.check(nil), p.removedURLs(1); got != want {
		t.Fatalf("story 1 absent twice again: removed %s, want %s", got, want)
	}
	again := removed.Add(24 * time.Hour)
	setTimes(first, again)
	gone = pageLinks(t, p.st, p.page.ID, watch.LinksRemoved, 100)
	if len(gone) != 1 || !gone[0].RemovedAt.Equal(again) || *gone[0].DwellSeconds != int64(again.Sub(first)/time.Second) {
		t.Fatalf("removed links after story 1 left twice: %+v, want it once, removed at %s, %d s after its first sighting",
			gone, again, int64(again.Sub(first)/time.Second))
	}
}

// TestPageLinksPages pages through both lists with every limit: the pages
// join up to the whole list, in order, without a link twice.
func TestPageLinksPages(t *testing.T) {
	t.Parallel()
	p := newStoryPage(t, "pages")
	for i := range 12 {
		p.show(i)
	}
	p.check(nil)
	for i := 12; i < 20; i++ { // new links, one check each: distinct first sightings
		p.show(i)
		p.check(nil)
	}
	for i := range 7 {
		p.hide(i * 2)
	}
	p.check(nil)
	p.check(nil)
	for _, state := range []watch.LinkState{watch.LinksCurrent, watch.LinksRemoved} {
		whole := pageLinks(t, p.st, p.page.ID, state, 1000)
		want := map[watch.LinkState]int{watch.LinksCurrent: 13, watch.LinksRemoved: 7}[state]
		if len(whole) != want {
			t.Fatalf("%s links: %d, want %d: %s", state, len(whole), want, urlsOf(whole))
		}
		for i := 1; i < len(whole); i++ {
			a, b := whole[i-1].Cursor, whole[i].Cursor
			if a.At.Before(b.At) || a.At.Equal(b.At) && a.ID <= b.ID {
				t.Fatalf("%s links out of order at %d: %+v before %+v", state, i, a, b)
			}
		}
		for limit := 1; limit <= 5; limit++ {
			if got := pageLinks(t, p.st, p.page.ID, state, limit); urlsOf(got) != urlsOf(whole) {
				t.Fatalf("%s links %d at a time: %s, want %s", state, limit, urlsOf(got), urlsOf(whole))
			}
		}
	}
}

// TestPageLinksSaysWhyItHasNone: an unknown page and one in the trash are
// not found; the current links of a page checked without removals are not
// known (its removed ones are listed); a page never checked has none.
func TestPageLinksSaysWhyItHasNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := openStore(t)
	if _, err := st.PageLinks(ctx, watch.LinkFilter{PageID: 999999}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("links of no page: %v, want ErrPageNotFound", err)
	}
	fresh, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://fresh.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, state := range []watch.LinkState{watch.LinksCurrent, watch.LinksRemoved} {
		if got, err := st.PageLinks(ctx, watch.LinkFilter{PageID: fresh.ID, State: state}); err != nil || len(got) != 0 {
			t.Fatalf("%s links of a page never checked: %v, %v; want none", state, got, err)
		}
	}
	off, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://off.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ls := links(off.BaseURL + "a")
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: off.ID, FetchedAt: time.Now(), Status: 200, FullSet: true,
		Removals: watch.Removals{Keys: keysOf(ls)}}, ls); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PageLinks(ctx, watch.LinkFilter{PageID: off.ID}); !errors.Is(err, watch.ErrPageNotFollowed) {
		t.Fatalf("current links of a page checked with removals off: %v, want ErrPageNotFollowed", err)
	}
	if got, err := st.PageLinks(ctx, watch.LinkFilter{PageID: off.ID, State: watch.LinksRemoved}); err != nil || len(got) != 0 {
		t.Fatalf("removed links of a page checked with removals off: %v, %v; want none", got, err)
	}
	if _, err := st.TrashPage(ctx, fresh.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PageLinks(ctx, watch.LinkFilter{PageID: fresh.ID, State: watch.LinksRemoved}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("links of a page in the trash: %v, want ErrPageNotFound", err)
	}
}

// TestPrunedLinkIsRemovedWithoutItsTimes: a removed link whose row links'
// retention pruned keeps its URL and text, and says its times are unknown.
func TestPrunedLinkIsRemovedWithoutItsTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	id := pageWithADueRemoval(t, st, "forgotten", time.Now().Add(-time.Hour))
	recordRemovals(t, st, id)
	for _, sql := range []string{
		`UPDATE links SET last_seen_at = now() - interval '100 days' WHERE page_id = $1 AND url = 'https://forgotten.example/b'`,
		`UPDATE pages SET links_seen_at = now() WHERE id = $1`,
	} {
		if _, err := pool.Exec(ctx, sql, id); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PruneLinks(ctx, 90*24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("PruneLinks = %d, %v; want b pruned", n, err)
	}
	got := pageLinks(t, st, id, watch.LinksRemoved, 10)
	if len(got) != 1 || got[0].URL != "https://forgotten.example/b" || got[0].Text != "text of https://forgotten.example/b" ||
		got[0].RemovedAt == nil || got[0].FirstSeenAt != nil || got[0].LastSeenAt != nil || got[0].DwellSeconds != nil || got[0].Code != "" {
		t.Fatalf("removed links after b was pruned: %+v; want b with its text and removal, and no times", got)
	}
}
