package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// digests returns the page's links and body digests as its next job
// carries them.
func digests(t *testing.T, st *store.Store, page int64) (links, body string) {
	t.Helper()
	var job watch.Job
	_, err := st.ClaimDue(context.Background(), watch.ClaimParams{Limit: 100, Lease: time.Millisecond}, func(_ context.Context, jobs []watch.Job) ([]watch.Postponed, error) {
		for _, j := range jobs {
			if j.ID == page {
				job = j
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if job.ID == 0 {
		t.Fatalf("page %d was not claimed", page)
	}
	return job.LinksDigest, job.BodyDigest
}

// The body digest is kept with the links digest it extends: set by a whole
// check, kept by an unchanged one (or moved to the body an unchanged link
// set was read from), cleared when the links digest is, by caps or by an
// options change.
func TestBodyDigestFollowsTheLinksDigest(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://body.example/"})
	if err != nil {
		t.Fatal(err)
	}
	due := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE pages SET next_check_at = now() - interval '1 second', lease_until = NULL WHERE id = $1`, page.ID); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-time.Hour)
	check := func(c watch.Check, ls []watch.NewLink) {
		t.Helper()
		at = at.Add(time.Second)
		c.PageID, c.FetchedAt, c.Status = page.ID, at, 200
		if _, err := st.RecordCheck(ctx, c, ls); err != nil {
			t.Fatal(err)
		}
		due()
	}
	due()
	check(watch.Check{FullSet: true, LinksDigest: "L1", BodyDigest: "B1"}, links("https://body.example/a"))
	if l, b := digests(t, st, page.ID); l != "L1" || b != "B1" {
		t.Fatalf("after a whole check: %q %q, want L1 B1", l, b)
	}
	check(watch.Check{BodyDigest: "B1"}, nil) // the same body
	check(watch.Check{BodyDigest: "B2"}, nil) // another body, the same links
	if l, b := digests(t, st, page.ID); l != "L1" || b != "B2" {
		t.Fatalf("after unchanged checks: %q %q, want L1 and the last body's B2", l, b)
	}
	check(watch.Check{}, nil) // a 304: no body read
	if _, b := digests(t, st, page.ID); b != "B2" {
		t.Fatalf("after a 304: body digest %q, want B2 kept", b)
	}
	// A check whose new links are cut by the caps promises nothing.
	check(watch.Check{FullSet: true, LinksDigest: "L3", BodyDigest: "B3", Caps: watch.Caps{PerCheck: 1}},
		links("https://body.example/a", "https://body.example/b", "https://body.example/c"))
	if l, b := digests(t, st, page.ID); l != "" || b != "" {
		t.Fatalf("after a cut check: %q %q, want both cleared", l, b)
	}
	check(watch.Check{BodyDigest: "B4"}, nil) // unchanged, but no links digest stands
	if _, b := digests(t, st, page.ID); b != "" {
		t.Fatalf("an unchanged check without a links digest set the body digest %q", b)
	}
	check(watch.Check{FullSet: true, LinksDigest: "L5", BodyDigest: "B5"}, links("https://body.example/a", "https://body.example/b", "https://body.example/c"))
	if _, err := st.EditPage(ctx, page.ID, watch.PageEdit{Within: &[]string{"main"}}); err != nil {
		t.Fatal(err)
	}
	if l, b := digests(t, st, page.ID); l != "" || b != "" {
		t.Fatalf("after an options change: %q %q, want both cleared", l, b)
	}
}
