package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// sourcePage registers a page watched through its homepage and feeds, with
// one discovered feed, and returns the page and the feed.
func sourcePage(t *testing.T, st *store.Store, url string) (watch.Page, watch.SourceRef) {
	t.Helper()
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: url, Sources: []string{"homepage", "feeds"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDiscovery(ctx, page.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: url + "feed.xml", Title: "News"}}, ""); err != nil {
		t.Fatal(err)
	}
	sources, err := st.Sources(ctx, page.ID)
	if err != nil || len(sources) != 1 {
		t.Fatalf("Sources after a discovery = %+v, %v; want the one feed", sources, err)
	}
	s := sources[0]
	if s.Kind != watch.SourceFeed || !s.Enabled || !s.Chosen || s.BaselineAt != nil || s.Status() != "pending" {
		t.Fatalf("discovered source = %+v, want an enabled feed, chosen, pending its baseline", s)
	}
	return page, watch.SourceRef{ID: s.ID, Kind: s.Kind, URL: s.URL}
}

func feedCheck(page int64, src watch.SourceRef, at time.Time) watch.SourceCheck {
	return watch.SourceCheck{PageID: page, Source: src, FetchedAt: at, Status: 200, Caps: watch.Caps{PerCheck: 1000, PerDay: 20000}}
}

func updatesOf(t *testing.T, db *pgxpool.Pool, page int64) map[string]string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT url, source || coalesce(' ' || to_char(published_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI'), '')
		FROM updates WHERE page_id = $1`, page)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var u, s string
		if err := rows.Scan(&u, &s); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[u]; dup {
			t.Fatalf("%s recorded twice", u)
		}
		out[u] = s
	}
	return out
}

// A source's first check is silent; its later new items become updates
// with their source and publication time, once per page whichever source
// saw them first; the homepage takes over a feed's text without a
// revision, and a feed never changes the homepage's.
func TestSourceCheckOncePerPage(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://portal.example/")
	t0 := time.Now().Add(-time.Hour)

	// The homepage's baseline knows /a.
	home := links("https://portal.example/a")
	if _, err := st.RecordCheck(ctx, ok(page.ID, t0), home); err != nil {
		t.Fatal(err)
	}
	// The feed's baseline: /a and /old, silent.
	c := feedCheck(page.ID, feed, t0.Add(time.Minute))
	c.ItemsDigest = "d1"
	rec, err := st.RecordSourceCheck(ctx, c, links("https://portal.example/a", "https://portal.example/old"))
	if err != nil || !rec.Baseline || len(rec.Updates) != 0 || rec.Inserted != 1 {
		t.Fatalf("feed baseline = %+v, %v; want silent, /old inserted", rec, err)
	}
	// Its next check brings /b, dated, and /a again under another title.
	items := links("https://portal.example/a", "https://portal.example/b")
	items[0].Text = "Feed title of a"
	published := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
	items[1].PublishedAt = &published
	c = feedCheck(page.ID, feed, t0.Add(2*time.Minute))
	c.ItemsDigest = "d2"
	rec, err = st.RecordSourceCheck(ctx, c, items)
	if err != nil || rec.Baseline || len(rec.Updates) != 1 || rec.Updates[0].URL != "https://portal.example/b" ||
		rec.Updates[0].Source != watch.SourceFeed || rec.Updates[0].PublishedAt == nil || !rec.Updates[0].PublishedAt.Equal(published) {
		t.Fatalf("feed check = %+v, %v; want /b new from the feed, published %s", rec, err, published)
	}
	var text, source string
	if err := db.QueryRow(ctx, `SELECT text, source FROM links WHERE page_id = $1 AND url = 'https://portal.example/a'`, page.ID).Scan(&text, &source); err != nil {
		t.Fatal(err)
	}
	if text != "text of https://portal.example/a" || source != "homepage" {
		t.Fatalf("/a after the feed named it otherwise = %q from %s; want the homepage's text kept", text, source)
	}
	// The homepage then shows /b under its own headline, and /c.
	home = links("https://portal.example/a", "https://portal.example/b", "https://portal.example/c")
	home[1].Text = "Homepage headline of b"
	hrec, err := st.RecordCheck(ctx, ok(page.ID, t0.Add(3*time.Minute)), home)
	if err != nil || len(hrec.Updates) != 1 || hrec.Updates[0].URL != "https://portal.example/c" || hrec.Revisions != 0 {
		t.Fatalf("homepage check = %+v, %v; want /c new alone and no revision", hrec, err)
	}
	if err := db.QueryRow(ctx, `SELECT text, source FROM links WHERE page_id = $1 AND url = 'https://portal.example/b'`, page.ID).Scan(&text, &source); err != nil {
		t.Fatal(err)
	}
	if text != "Homepage headline of b" || source != "homepage" {
		t.Fatalf("/b after the homepage showed it = %q from %s; want the homepage's headline, source homepage", text, source)
	}
	var events int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM events WHERE page_id = $1 AND kind = 'link.rewritten'`, page.ID).Scan(&events); err != nil || events != 0 {
		t.Fatalf("revisions = %d, %v; the homepage's first headline of a feed's story is no rewrite", events, err)
	}
	// The feed lists /c now: not new again.
	c = feedCheck(page.ID, feed, t0.Add(4*time.Minute))
	rec, err = st.RecordSourceCheck(ctx, c, links("https://portal.example/b", "https://portal.example/c"))
	if err != nil || len(rec.Updates) != 0 {
		t.Fatalf("feed listing known stories = %+v, %v; want nothing new", rec, err)
	}
	got := updatesOf(t, db, page.ID)
	want := map[string]string{"https://portal.example/b": "feed 2026-12-03T09:30", "https://portal.example/c": "homepage"}
	if len(got) != len(want) || got["https://portal.example/b"] != want["https://portal.example/b"] || got["https://portal.example/c"] != want["https://portal.example/c"] {
		t.Fatalf("updates = %v, want %v", got, want)
	}
	// Updates read back carry their source.
	us, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if u.URL == "https://portal.example/b" && (u.Source != watch.SourceFeed || u.SourceID != feed.ID || u.PublishedAt == nil) {
			t.Errorf("update of /b read back = %+v, want source feed %d and its publication time", u, feed.ID)
		}
	}
	srcs, err := st.Sources(ctx, page.ID)
	if err != nil || srcs[0].BaselineAt == nil || srcs[0].Status() != "ok" {
		t.Fatalf("source after checks = %+v, %v; want ok", srcs, err)
	}
}

// New links of a source are capped per check as a homepage's are; the
// cut ones come with a later check, and the digest is not kept meanwhile.
// A failed check is recorded on the source, not the page; a redelivered
// check changes nothing.
func TestSourceCheckCapsFailuresRedelivery(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://capped.example/")
	t0 := time.Now().Add(-time.Hour)
	if _, err := st.RecordSourceCheck(ctx, feedCheck(page.ID, feed, t0), links("https://capped.example/0")); err != nil {
		t.Fatal(err)
	}
	items := links("https://capped.example/1", "https://capped.example/2", "https://capped.example/3")
	c := feedCheck(page.ID, feed, t0.Add(time.Minute))
	c.Caps.PerCheck, c.ItemsDigest = 2, "digest"
	rec, err := st.RecordSourceCheck(ctx, c, items)
	if err != nil || len(rec.Updates) != 2 || rec.Cut != 1 {
		t.Fatalf("capped check = %+v, %v; want 2 updates and 1 cut", rec, err)
	}
	var digest *string
	if err := db.QueryRow(ctx, `SELECT items_digest FROM sources WHERE id = $1`, feed.ID).Scan(&digest); err != nil || digest != nil {
		t.Fatalf("items digest after a cut = %v, %v; want none", digest, err)
	}
	rec, err = st.RecordSourceCheck(ctx, c, items) // redelivered: the cut one is recorded now, the others not again
	if err != nil || len(rec.Updates) != 1 || rec.Updates[0].URL != "https://capped.example/3" {
		t.Fatalf("redelivered check = %+v, %v; want /3 alone", rec, err)
	}
	failed := feedCheck(page.ID, feed, t0.Add(2*time.Minute))
	failed.Status, failed.Error = 500, "https://capped.example/feed.xml: HTTP 500"
	if _, err := st.RecordSourceCheck(ctx, failed, nil); err != nil {
		t.Fatal(err)
	}
	srcs, err := st.Sources(ctx, page.ID)
	if err != nil || srcs[0].Status() != "failing" || srcs[0].ConsecutiveFailures != 1 || srcs[0].LastStatus != 500 {
		t.Fatalf("source after a failure = %+v, %v", srcs, err)
	}
	p, err := st.Page(ctx, page.ID)
	if err != nil || p.LastError != "" {
		t.Fatalf("page after its feed failed = %q, %v; the page's own status is the homepage's", p.LastError, err)
	}
	if _, err := st.RecordSourceCheck(ctx, feedCheck(page.ID, watch.SourceRef{ID: feed.ID + 1000, Kind: "feed"}, t0), nil); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("check of an unknown source = %v, want ErrPageNotFound", err)
	}
}

// Choosing a kind of source again re-baselines its rows silently; a
// source discovery no longer finds is disabled after three days, and a
// discovery that finds it again enables and re-baselines it.
func TestSourcesChosenAgainAndGone(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://again.example/")
	if _, err := st.RecordSourceCheck(ctx, feedCheck(page.ID, feed, time.Now()), links("https://again.example/x")); err != nil {
		t.Fatal(err)
	}
	only := []string{"homepage"}
	if _, err := st.EditPage(ctx, page.ID, watch.PageEdit{Sources: &only}); err != nil {
		t.Fatal(err)
	}
	srcs, _ := st.Sources(ctx, page.ID)
	if srcs[0].Chosen || srcs[0].BaselineAt == nil {
		t.Fatalf("feed after the page dropped feeds = %+v, want kept, not chosen", srcs[0])
	}
	both := []string{"homepage", "feeds"}
	p, err := st.EditPage(ctx, page.ID, watch.PageEdit{Sources: &both})
	if err != nil || !p.SourcesDiscoveredAt.IsZero() {
		t.Fatalf("page after choosing feeds again = %+v, %v; want a discovery due", p.SourcesDiscoveredAt, err)
	}
	srcs, _ = st.Sources(ctx, page.ID)
	if !srcs[0].Chosen || srcs[0].BaselineAt != nil {
		t.Fatalf("feed chosen again = %+v, want a baseline pending", srcs[0])
	}
	if _, err := db.Exec(ctx, `UPDATE sources SET found_at = now() - interval '4 days' WHERE id = $1`, feed.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDiscovery(ctx, page.ID, nil, ""); err != nil {
		t.Fatal(err)
	}
	srcs, _ = st.Sources(ctx, page.ID)
	if srcs[0].Enabled || srcs[0].Status() != "disabled" {
		t.Fatalf("feed not found for 4 days = %+v, want disabled", srcs[0])
	}
	if err := st.RecordDiscovery(ctx, page.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: feed.URL}}, ""); err != nil {
		t.Fatal(err)
	}
	srcs, _ = st.Sources(ctx, page.ID)
	if !srcs[0].Enabled || srcs[0].BaselineAt != nil || srcs[0].Title != "News" {
		t.Fatalf("feed found again = %+v, want enabled, a baseline pending, its title kept", srcs[0])
	}
}

// The claim hands out due sources of the kinds their pages choose, with
// their validators and digest, leases them, and hands out discoveries of
// pages with sources beyond the homepage once a day.
func TestClaimDueSources(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://claim.example/")
	if _, err := db.Exec(ctx, `UPDATE sources SET etag = '"v1"', items_digest = 'dig' WHERE id = $1`, feed.ID); err != nil {
		t.Fatal(err)
	}
	plain, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://plain.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDiscovery(ctx, plain.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "https://plain.example/rss"}}, ""); err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	p := watch.ClaimParams{Limit: 100, Lease: time.Minute}
	if _, err := st.ClaimDueSources(ctx, p, 10, func(_ context.Context, js []watch.Job) ([]watch.Postponed, error) {
		jobs = js
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	// The page discovered just now has no discovery due; the page of the
	// homepage alone has its feed row but does not choose feeds.
	if len(jobs) != 1 || jobs[0].Source == nil || jobs[0].Source.ID != feed.ID || jobs[0].ETag != `"v1"` ||
		jobs[0].ItemsDigest != "dig" || jobs[0].BaseURL != feed.URL || jobs[0].ID != page.ID || jobs[0].PageURL != page.BaseURL {
		t.Fatalf("claimed %+v; want the feed's check alone", jobs)
	}
	if _, err := db.Exec(ctx, `UPDATE pages SET sources_discovered_at = now() - interval '25 hours' WHERE id = $1`, page.ID); err != nil {
		t.Fatal(err)
	}
	jobs = nil
	if _, err := st.ClaimDueSources(ctx, p, 10, func(_ context.Context, js []watch.Job) ([]watch.Postponed, error) {
		jobs = js
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || !jobs[0].Discover || jobs[0].ID != page.ID || len(jobs[0].Sources) != 2 {
		t.Fatalf("second claim = %+v; want the page's discovery alone (its feed is leased)", jobs)
	}
}

// A failed discovery keeps its sources and says why, until one works; the
// page is tried again within the hour, not the next day.
func TestFailedDiscoverySaysWhy(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, _ := sourcePage(t, st, "https://failing.example/")
	const why = "fetch https://failing.example/: robots.txt disallows it"
	if err := st.RecordDiscovery(ctx, page.ID, nil, why); err != nil {
		t.Fatal(err)
	}
	p, err := st.Page(ctx, page.ID)
	if err != nil || p.SourcesDiscoveryError != why {
		t.Fatalf("after a failed discovery: error %q, %v; want %q", p.SourcesDiscoveryError, err, why)
	}
	if again := p.SourcesDiscoveredAt.Add(watch.SourceRediscovery); again.After(time.Now().Add(time.Hour + time.Minute)) {
		t.Errorf("a failed discovery is tried again at %v; want within the hour", again)
	}
	if sources, err := st.Sources(ctx, page.ID); err != nil || len(sources) != 1 || !sources[0].Enabled {
		t.Fatalf("sources after a failed discovery: %+v, %v; want the feed kept", sources, err)
	}
	if err := st.RecordDiscovery(ctx, page.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "https://failing.example/feed.xml"}}, ""); err != nil {
		t.Fatal(err)
	}
	if p, err = st.Page(ctx, page.ID); err != nil || p.SourcesDiscoveryError != "" {
		t.Fatalf("after a discovery that worked: error %q, %v; want none", p.SourcesDiscoveryError, err)
	}
}

// A source's own interval schedules its checks, the page's interval when
// it has none; a shorter one brings a distant check forward; a source of
// no watched page is not found, and an interval under the minimum is
// refused before any write.
func TestSourceInterval(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://interval.example/")
	if _, err := db.Exec(ctx, `UPDATE pages SET check_interval = interval '1 hour' WHERE id = $1`, page.ID); err != nil {
		t.Fatal(err)
	}
	// next_check_at of the source after one claim, and the instant it was
	// due, with its baseline taken so that the claim anchors the schedule.
	claim := func() (due, next time.Time) {
		t.Helper()
		if _, err := db.Exec(ctx, `UPDATE sources SET next_check_at = now() - interval '1 second', lease_until = NULL, baseline_at = now()
			WHERE id = $1 RETURNING next_check_at`, feed.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT next_check_at FROM sources WHERE id = $1`, feed.ID).Scan(&due); err != nil {
			t.Fatal(err)
		}
		n, err := st.ClaimDueSources(ctx, watch.ClaimParams{Limit: 10, Lease: time.Minute}, 0,
			func(context.Context, []watch.Job) ([]watch.Postponed, error) { return nil, nil })
		if err != nil || n.Jobs != 1 {
			t.Fatalf("claim = %+v, %v; want the feed", n, err)
		}
		if err := db.QueryRow(ctx, `SELECT next_check_at FROM sources WHERE id = $1`, feed.ID).Scan(&next); err != nil {
			t.Fatal(err)
		}
		return due, next
	}
	if due, next := claim(); next.Sub(due) != time.Hour {
		t.Fatalf("following its page, the next check is %s after the due one; want 1h", next.Sub(due))
	}

	two := 2 * time.Minute
	src, err := st.EditSource(ctx, feed.ID, watch.SourceEdit{Interval: &two})
	if err != nil {
		t.Fatal(err)
	}
	if src.CheckInterval != two || src.PageInterval != time.Hour || src.EffectiveInterval() != two || src.Schedule().FollowsPage ||
		time.Until(src.NextCheckAt) > two+time.Second {
		t.Fatalf("after --interval 2m: %+v (schedule %+v); want its own 2m and its check within 2m", src, src.Schedule())
	}
	if due, next := claim(); next.Sub(due) != two {
		t.Fatalf("with its own interval, the next check is %s after the due one; want 2m", next.Sub(due))
	}
	listed, err := st.Sources(ctx, page.ID)
	if err != nil || len(listed) != 1 || listed[0].EffectiveInterval() != two {
		t.Fatalf("Sources = %+v, %v; want the feed every 2m", listed, err)
	}

	follow := time.Duration(0)
	if src, err = st.EditSource(ctx, feed.ID, watch.SourceEdit{Interval: &follow}); err != nil || src.CheckInterval != 0 ||
		src.EffectiveInterval() != time.Hour || !src.Schedule().FollowsPage {
		t.Fatalf("after --interval page: %+v, %v; want it to follow its page's 1h", src, err)
	}
	if due, next := claim(); next.Sub(due) != time.Hour {
		t.Fatalf("following its page again, the next check is %s after the due one; want 1h", next.Sub(due))
	}

	short := 5 * time.Second
	_, err = st.EditSource(ctx, feed.ID, watch.SourceEdit{Interval: &short})
	if refusals := watch.RefusalsOf(err); len(refusals) != 1 || refusals[0].Field != "interval" {
		t.Fatalf("an interval of 5s: %v; want it refused, naming interval", err)
	}
	var own *time.Duration
	if err := db.QueryRow(ctx, `SELECT extract(epoch FROM check_interval) * interval '1 second' FROM sources WHERE id = $1`, feed.ID).Scan(&own); err != nil || own != nil {
		t.Fatalf("check_interval after a refused edit = %v, %v; want NULL still", own, err)
	}
	if _, err := st.EditSource(ctx, feed.ID+1000, watch.SourceEdit{Interval: &two}); !errors.Is(err, watch.ErrSourceNotFound) {
		t.Fatalf("an unknown source: %v; want ErrSourceNotFound", err)
	}
	if _, err := st.TrashPage(ctx, page.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EditSource(ctx, feed.ID, watch.SourceEdit{Interval: &two}); !errors.Is(err, watch.ErrSourceNotFound) {
		t.Fatalf("a source of a page in the trash: %v; want ErrSourceNotFound", err)
	}
}

// A paused source is listed and not claimed; discovery finding it again
// does not resume it; resumed, it is due at once and its check is a
// silent baseline.
func TestPausedSourceIsNotChecked(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, feed := sourcePage(t, st, "https://paused.example/")
	if _, err := db.Exec(ctx, `UPDATE sources SET baseline_at = now(), items_digest = 'd', etag = '"e"', next_check_at = now() - interval '1 second'
		WHERE id = $1`, feed.ID); err != nil {
		t.Fatal(err)
	}
	claimed := func() int {
		t.Helper()
		n, err := st.ClaimDueSources(ctx, watch.ClaimParams{Limit: 10, Lease: time.Minute}, 0,
			func(context.Context, []watch.Job) ([]watch.Postponed, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		return n.Jobs
	}
	yes, no := true, false
	src, err := st.EditSource(ctx, feed.ID, watch.SourceEdit{Paused: &yes})
	if err != nil || !src.Paused || src.Status() != "paused" {
		t.Fatalf("paused: %+v, %v", src, err)
	}
	if n := claimed(); n != 0 {
		t.Fatalf("a paused source was claimed (%d jobs)", n)
	}
	if err := st.RecordDiscovery(ctx, page.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: feed.URL}}, ""); err != nil {
		t.Fatal(err)
	}
	listed, err := st.Sources(ctx, page.ID)
	if err != nil || len(listed) != 1 || !listed[0].Paused || listed[0].BaselineAt == nil {
		t.Fatalf("after discovery found it again: %+v, %v; want it still paused, its baseline kept", listed, err)
	}
	if src, err = st.EditSource(ctx, feed.ID, watch.SourceEdit{Paused: &no}); err != nil || src.Paused || src.BaselineAt != nil ||
		src.Status() != "pending" || time.Until(src.NextCheckAt) > time.Second {
		t.Fatalf("resumed: %+v, %v; want it due now, pending a silent baseline", src, err)
	}
	var digest, etag *string
	if err := db.QueryRow(ctx, `SELECT items_digest, etag FROM sources WHERE id = $1`, feed.ID).Scan(&digest, &etag); err != nil || digest != nil || etag != nil {
		t.Fatalf("resumed with items digest %v, etag %v (%v); want both cleared, so the baseline reads it whole", digest, etag, err)
	}
	if n := claimed(); n != 1 {
		t.Fatalf("a resumed source was not claimed (%d jobs)", n)
	}
	if src, err = st.EditSource(ctx, feed.ID, watch.SourceEdit{Paused: &no}); err != nil || src.Paused {
		t.Fatalf("resumed again: %+v, %v", src, err)
	}
}
