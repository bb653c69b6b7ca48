package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func addPage(t *testing.T, st *store.Store, url string) int64 {
	t.Helper()
	p, err := st.CreatePage(context.Background(), watch.PageSpec{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

const insertUpdate = `INSERT INTO updates (page_id, url, text, code, link_key)
	SELECT $1, $2 || g, 'text ' || g, 'c' || g, hashtext($2 || g) FROM generate_series(1, $3) g`

// writeUpdates writes n updates of page in one transaction, as one check
// would, and waits until they are under the horizon: the shared server's
// other transactions (other tests') may hold it back for a while.
func writeUpdates(t *testing.T, pool *pgxpool.Pool, page int64, prefix string, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), insertUpdate, page, prefix, n); err != nil {
		t.Fatal(err)
	}
	settle(t, pool)
}

// settle waits until every update written so far is under the horizon. A
// write transaction open anywhere on the server (another suite's bulk load)
// holds the horizon back for as long as it runs; the failure names it.
func settle(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	err := testsvc.Poll(context.Background(), 3*time.Minute, testsvc.PollInterval, func() (bool, string, error) {
		var final bool
		var holder string
		err := pool.QueryRow(context.Background(), `
			SELECT coalesce(max(xact) < pg_snapshot_xmin(pg_current_snapshot()), true),
				coalesce((SELECT format('pid %s in database %s, open for %s', pid, datname, now() - xact_start)
					FROM pg_stat_activity WHERE backend_xid IS NOT NULL ORDER BY xact_start LIMIT 1), '')
			FROM updates`).Scan(&final, &holder)
		return final, "oldest write transaction: " + holder, err
	})
	if err != nil {
		t.Fatalf("updates under the horizon: %v", err)
	}
}

func claimOne(t *testing.T, st *store.Store) (watch.Lease, bool) {
	t.Helper()
	leases, err := st.ClaimSubscriptions(context.Background(), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) > 1 {
		t.Fatalf("claimed %d subscriptions, want at most 1", len(leases))
	}
	if len(leases) == 0 {
		return watch.Lease{}, false
	}
	return leases[0], true
}

func updateIDs(b watch.Batch) []int64 {
	ids := make([]int64, len(b.Updates))
	for i, u := range b.Updates {
		ids[i] = u.ID
	}
	return ids
}

// TestNotifyCursorSkipsNothingCommittedOutOfOrder proves the horizon: an
// update whose id is drawn first but committed last is still delivered,
// and before its transaction ends nothing past it is handed out.
//
// It does not run in parallel: its open transaction holds the horizon of
// every database on the server back.
func TestNotifyCursorSkipsNothingCommittedOutOfOrder(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	// Two pages: the checks of one page are serialised by its row (and
	// its hourly count, page_hours), so commits out of order are of
	// different pages' checks.
	page := addPage(t, st, "http://example.com/")
	other := addPage(t, st, "http://example.org/")
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", Secret: "whsec_x"})
	if err != nil {
		t.Fatal(err)
	}

	slow, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	if _, err := slow.Exec(ctx, insertUpdate, page, "http://example.com/slow/", 1); err != nil {
		t.Fatal(err)
	}
	// Larger ids, committed first.
	if _, err := pool.Exec(ctx, insertUpdate, other, "http://example.org/fast/", 2); err != nil {
		t.Fatal(err)
	}

	if l, ok := claimOne(t, st); ok {
		b, _ := st.PendingBatch(ctx, l, 100)
		t.Fatalf("claimed subscription %d with %v while an older transaction was open: the slow update would be skipped", l.Subscription.ID, updateIDs(b))
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, pool)

	var got []int64
	for range 3 {
		l, ok := claimOne(t, st)
		if !ok {
			break
		}
		if l.Subscription.ID != sub.ID {
			t.Fatalf("claimed subscription %d, want %d", l.Subscription.ID, sub.ID)
		}
		b, err := st.PendingBatch(ctx, l, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, updateIDs(b)...)
		if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{ResponseCode: 204}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("delivered %v, want [1 2 3]: the slow update first, each check its own batch", got)
	}
}

func TestNotifyBatchIsOneCheckAndStableUnderItsID(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	other := addPage(t, st, "http://other.example/")
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", PageID: page})
	if err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, other, "http://other.example/a/", 2) // out of scope
	writeUpdates(t, pool, page, "http://example.com/a/", 3)
	writeUpdates(t, pool, page, "http://example.com/b/", 2)

	l, ok := claimOne(t, st)
	if !ok || l.Subscription.ID != sub.ID {
		t.Fatalf("claim: %v %v", l, ok)
	}
	first, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Updates) != 3 || first.ID != again.ID || fmt.Sprint(updateIDs(first)) != fmt.Sprint(updateIDs(again)) {
		t.Fatalf("batch %s %v then %s %v: want the first check's 3 updates, twice the same", first.ID, updateIDs(first), again.ID, updateIDs(again))
	}
	if p := first.Pages[page]; p.URL != "http://example.com/" {
		t.Fatalf("batch page %+v", p)
	}
	// A batch capped below the check's size continues where it stopped.
	capped, err := st.PendingBatch(ctx, l, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(capped.Updates) != 2 {
		t.Fatalf("capped batch holds %d updates, want 2", len(capped.Updates))
	}
	if err := st.CompleteDelivery(ctx, l, capped, watch.Attempt{ResponseCode: 200}); err != nil {
		t.Fatal(err)
	}
	l, _ = claimOne(t, st)
	rest, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Updates) != 1 || rest.Updates[0].ID != first.Updates[2].ID {
		t.Fatalf("after the capped batch: %v, want [%d]", updateIDs(rest), first.Updates[2].ID)
	}
}

func TestNotifyClaimSkipsLeasedAndLostLeaseChangesNothing(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/"}); err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, page, "http://example.com/a/", 1)
	leases, err := st.ClaimSubscriptions(ctx, 10, 50*time.Millisecond)
	if err != nil || len(leases) != 1 {
		t.Fatalf("first claim: %v, %v", leases, err)
	}
	stale := leases[0]
	if _, ok := claimOne(t, st); ok {
		t.Fatal("a leased subscription was claimed twice")
	}
	// The lease runs out; another notifier takes over and delivers.
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	fresh, ok := claimOne(t, st)
	if !ok {
		t.Fatal("an expired lease was not claimable")
	}
	b, err := st.PendingBatch(ctx, fresh, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CompleteDelivery(ctx, stale, b, watch.Attempt{}); !errors.Is(err, watch.ErrLeaseLost) {
		t.Fatalf("complete with a lost lease: %v, want ErrLeaseLost", err)
	}
	if _, err := st.FailDelivery(ctx, stale, b, watch.Attempt{Error: "x", RetryAt: time.Now()}); !errors.Is(err, watch.ErrLeaseLost) {
		t.Fatalf("fail with a lost lease: %v, want ErrLeaseLost", err)
	}
	if err := st.CompleteDelivery(ctx, fresh, b, watch.Attempt{ResponseCode: 200}); err != nil {
		t.Fatal(err)
	}
	if _, ok := claimOne(t, st); ok {
		t.Fatal("claimed a subscription with nothing pending")
	}
}

func TestNotifyFailuresBackOffThenPause(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/"})
	if err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, page, "http://example.com/a/", 1)
	l, _ := claimOne(t, st)
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	paused, err := st.FailDelivery(ctx, l, b, watch.Attempt{ResponseCode: 500, Error: "HTTP 500", RetryAt: time.Now().Add(time.Hour), PauseAfter: time.Hour})
	if err != nil || paused {
		t.Fatalf("first failure: paused %v, %v", paused, err)
	}
	if _, ok := claimOne(t, st); ok {
		t.Fatal("claimed a subscription before its retry time")
	}
	// Pretend the failures began two hours ago and the retry is due.
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET failing_since = now() - interval '2 hours', next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	l, _ = claimOne(t, st)
	if l.Attempts != 1 {
		t.Fatalf("lease attempts %d, want 1", l.Attempts)
	}
	paused, err = st.FailDelivery(ctx, l, b, watch.Attempt{ResponseCode: 500, Error: "HTTP 500: boom", RetryAt: time.Now(), PauseAfter: time.Hour})
	if err != nil || !paused {
		t.Fatalf("failure past PauseAfter: paused %v, %v", paused, err)
	}
	list, err := st.Subscriptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := list[0]
	if got.ID != sub.ID || got.PausedAt.IsZero() || got.PausedReason != "HTTP 500: boom" ||
		got.Last.Status != watch.Paused || got.Last.Attempts != 2 || got.Last.ResponseCode != 500 || got.Last.MessageID != b.ID {
		t.Fatalf("after pausing: %+v", got)
	}
	if _, ok := claimOne(t, st); ok {
		t.Fatal("claimed a paused subscription")
	}
	if err := st.ResumeSubscription(ctx, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := claimOne(t, st); !ok {
		t.Fatal("a resumed subscription was not claimed")
	}
}

func TestNotifyDigestTakesEveryCheckAndWaitsForItsHour(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Email, Target: "desk@example.com", Digest: watch.DigestHourly}); err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, page, "http://example.com/a/", 2)
	writeUpdates(t, pool, page, "http://example.com/b/", 3)
	if _, ok := claimOne(t, st); ok {
		t.Fatal("an hourly digest was claimed before the top of the hour")
	}
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	l, ok := claimOne(t, st)
	if !ok {
		t.Fatal("a due digest was not claimed")
	}
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Updates) != 5 {
		t.Fatalf("digest holds %d updates, want both checks' 5", len(b.Updates))
	}
	if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{ResponseCode: 250}); err != nil {
		t.Fatal(err)
	}
	var next time.Time
	if err := pool.QueryRow(ctx, `SELECT next_attempt_at FROM subscriptions`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if want := time.Now().Truncate(time.Hour).Add(time.Hour); !next.Equal(want) {
		t.Fatalf("next digest at %s, want %s", next, want)
	}
}

func TestNotifyDeliveryLogKeepsTheNewest(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range store.KeptDeliveries + 20 {
		writeUpdates(t, pool, page, fmt.Sprintf("http://example.com/%d/", i), 1)
		l, ok := claimOne(t, st)
		if !ok {
			t.Fatalf("round %d: nothing claimed", i)
		}
		b, err := st.PendingBatch(ctx, l, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{ResponseCode: 200}); err != nil {
			t.Fatal(err)
		}
	}
	log, err := st.Deliveries(ctx, sub.ID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > store.KeptDeliveries || len(log) < store.KeptDeliveries-1 {
		t.Fatalf("the log holds %d entries, want about %d", len(log), store.KeptDeliveries)
	}
}

func TestNotifySubscribeToMissingPage(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	_, err := st.AddSubscription(context.Background(), watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", PageID: 999})
	if !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("subscribe to page 999: %v, want ErrPageNotFound", err)
	}
	if err := st.RemoveSubscription(context.Background(), 5); !errors.Is(err, watch.ErrSubscriptionNotFound) {
		t.Fatalf("remove 5: %v", err)
	}
}

// TestNotifyBatchHoldsOnePage splits a transaction that wrote two pages'
// updates into one message per page, skipping nothing between them.
func TestNotifyBatchHoldsOnePage(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	a, b := addPage(t, st, "http://a.example/"), addPage(t, st, "http://b.example/")
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key)
		VALUES ($1, 'http://a.example/1', 't', 'c', 1), ($2, 'http://b.example/1', 't', 'c', 2), ($1, 'http://a.example/2', 't', 'c', 3)`, a, b); err != nil {
		t.Fatal(err)
	}
	settle(t, pool)
	var pages []string
	for range 4 {
		l, ok := claimOne(t, st)
		if !ok {
			break
		}
		batch, err := st.PendingBatch(ctx, l, 100)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, fmt.Sprint(batch.Updates[0].PageID, updateIDs(batch)))
		if err := st.CompleteDelivery(ctx, l, batch, watch.Attempt{}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{fmt.Sprint(a, []int64{1}), fmt.Sprint(b, []int64{2}), fmt.Sprint(a, []int64{3})}; fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", pages, want)
	}
}

func TestNotifyIdleCursorsAdvanceWithoutSkipping(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	busy, quiet := addPage(t, st, "http://busy.example/"), addPage(t, st, "http://quiet.example/")
	if _, err := pool.Exec(ctx, `UPDATE pages SET tags = '{quiet}' WHERE id = $1`, quiet); err != nil {
		t.Fatal(err)
	}
	idle, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", Tag: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	cursor := func() string {
		var c string
		if err := pool.QueryRow(ctx, `SELECT cursor_xact::text FROM subscriptions WHERE id = $1`, idle.ID).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := cursor()
	writeUpdates(t, pool, busy, "http://busy.example/", 50) // out of the tag's scope
	if n, err := st.AdvanceIdleCursors(ctx); err != nil || n != 1 || cursor() == before {
		t.Fatalf("advance over the busy page's updates: moved %d (%v), cursor %s then %s", n, err, before, cursor())
	}
	writeUpdates(t, pool, quiet, "http://quiet.example/", 2)
	if n, err := st.AdvanceIdleCursors(ctx); err != nil || n != 0 {
		t.Fatalf("advance with the quiet page's updates pending: moved %d (%v), want 0", n, err)
	}
	l, ok := claimOne(t, st)
	if !ok {
		t.Fatal("the tag subscription's pending updates were not claimed")
	}
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil || len(b.Updates) != 2 || b.Updates[0].PageID != quiet {
		t.Fatalf("batch %v (%v), want the quiet page's 2 updates", updateIDs(b), err)
	}
}

// TestPendingBatchCarriesWhatTheAPIShows: a message's updates are the
// API's update objects, a redesign's flagged burst with their teasers, and
// the page named as people see it when it has no name of its own (its
// name was sent empty before).
func TestPendingBatchCarriesWhatTheAPIShows(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://news.example/")
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", Secret: "whsec_x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, summary, burst)
		VALUES ($1, 'http://news.example/a', 'A', 'ca', 1, 'A teaser', true)`, page); err != nil {
		t.Fatal(err)
	}
	settle(t, pool)
	l, ok := claimOne(t, st)
	if !ok {
		t.Fatal("nothing to claim")
	}
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil || len(b.Updates) != 1 {
		t.Fatalf("PendingBatch = %+v, %v", b, err)
	}
	u := b.Updates[0]
	if !u.Burst || u.Summary != "A teaser" || u.PageName != "news.example" || b.Pages[page].Name != "news.example" {
		t.Errorf("pending update %+v of page %+v: want the burst flag, the teaser and the page's display name", u, b.Pages[page])
	}
}

// insertArticleUpdates writes n updates of a page as a check of a page that
// reads articles does: the work of each URL, in the same transaction.
const insertArticleUpdates = `WITH news AS (` + insertUpdate + ` RETURNING discovered_at, page_id, url)
	INSERT INTO article_work (url, page_id, discovered_at) SELECT url, page_id, discovered_at FROM news
	ON CONFLICT (url) DO NOTHING`

// TestPendingBatchCarriesEachArticle: a message's update carries its
// article as the API lists it: the stored one without its body, status
// pending while its work waits, none for a link no article is read for.
func TestPendingBatchCarriesEachArticle(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://news.example/")
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/", Secret: "whsec_x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, insertArticleUpdates, page, "http://news.example/story/", 2); err != nil {
		t.Fatal(err)
	}
	work, err := st.ClaimArticleWork(ctx, 1, time.Minute)
	if err != nil || len(work) != 1 {
		t.Fatalf("ClaimArticleWork = %+v, %v", work, err)
	}
	published := "2026-12-01T07:30:00Z"
	if _, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL, Article: watch.Article{
		Status: watch.ArticleOK, URL: work[0].URL, Headline: "Ministry cuts fees", Description: "The lead.",
		Body: "A long body.", DatePublished: published, Author: []string{"A. Writer"}, FetchedAt: time.Now(),
	}}); err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, page, "http://news.example/plain/", 1)
	l, ok := claimOne(t, st)
	if !ok {
		t.Fatal("nothing to claim")
	}
	// One subscription to everything, no digest: the first check's two
	// updates, then the plain one.
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil || len(b.Updates) != 2 {
		t.Fatalf("PendingBatch = %v, %v; want the first check's 2 updates", updateIDs(b), err)
	}
	for _, u := range b.Updates {
		a := u.Article
		switch {
		case a == nil:
			t.Errorf("update %d (%s) has no article", u.ID, u.URL)
		case u.URL == work[0].URL:
			if a.Status != watch.ArticleOK || a.Headline != "Ministry cuts fees" || a.Description != "The lead." ||
				a.DatePublished != published || len(a.Author) != 1 || a.Body != "" || a.ID == 0 {
				t.Errorf("recorded article %+v: want it stored, without its body", *a)
			}
		default:
			if a.Status != watch.ArticlePending || a.URL != u.URL || a.ID != 0 {
				t.Errorf("waiting article %+v: want status pending and the link", *a)
			}
		}
	}
	if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{ResponseCode: 204}); err != nil {
		t.Fatal(err)
	}
	l, _ = claimOne(t, st)
	b, err = st.PendingBatch(ctx, l, 100)
	if err != nil || len(b.Updates) != 1 || b.Updates[0].Article != nil {
		t.Fatalf("PendingBatch = %+v, %v; want the plain update without an article", b.Updates, err)
	}
}

// TestNotifyHoldMovesTheNextAttemptOnly: a subscription keeps its wait for
// articles, and a held message leaves the cursor, the failures and the log
// alone; the subscription comes due again when the hold says.
func TestNotifyHoldMovesTheNextAttemptOnly(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	var refused *watch.RefusedError
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/",
		WaitArticle: watch.MaxWaitArticle + time.Second}); !errors.As(err, &refused) || refused.Field != "wait_article" {
		t.Fatalf("a wait over the maximum: %v, want it refused on wait_article", err)
	}
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/",
		WaitArticle: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.Subscription(ctx, sub.ID); err != nil || got.WaitArticle != 30*time.Second {
		t.Fatalf("Subscription = %+v, %v; want its wait of 30s", got, err)
	}
	if _, err := pool.Exec(ctx, insertArticleUpdates, page, "http://example.com/a/", 1); err != nil {
		t.Fatal(err)
	}
	settle(t, pool)
	l, ok := claimOne(t, st)
	if !ok || l.Subscription.WaitArticle != 30*time.Second {
		t.Fatalf("claim: %+v, %v; want the subscription with its wait", l, ok)
	}
	first, err := st.PendingBatch(ctx, l, 100)
	if err != nil || len(first.Updates) != 1 {
		t.Fatalf("PendingBatch = %v, %v", updateIDs(first), err)
	}
	if err := st.HoldDelivery(ctx, l, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.HoldDelivery(ctx, l, time.Now()); !errors.Is(err, watch.ErrLeaseLost) {
		t.Fatalf("a second hold under the same lease: %v, want ErrLeaseLost", err)
	}
	if l, ok := claimOne(t, st); ok {
		t.Fatalf("claimed subscription %d held for an hour", l.Subscription.ID)
	}
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	l, ok = claimOne(t, st)
	if !ok || l.Attempts != 0 || !l.FailingSince.IsZero() {
		t.Fatalf("claim after the hold: %+v, %v; want it with no attempt counted", l, ok)
	}
	again, err := st.PendingBatch(ctx, l, 100)
	if err != nil || again.ID != first.ID {
		t.Fatalf("batch after the hold %s (%v), want %s again", again.ID, err, first.ID)
	}
	if log, err := st.Deliveries(ctx, sub.ID, 10); err != nil || len(log) != 0 {
		t.Fatalf("delivery log %+v, %v; want nothing for a hold", log, err)
	}
}
