package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// insertEvent writes one event of page in tx, as a check's statement
// would, and returns its id.
func insertEvent(t *testing.T, tx pgx.Tx, page int64, kind watch.EventKind) int64 {
	t.Helper()
	var id int64
	err := tx.QueryRow(context.Background(), `
		INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text, reason, detail)
		SELECT $1, $2, now(),
			CASE WHEN $2 = 'link.rewritten' THEN 42 END,
			CASE WHEN $2 = 'link.rewritten' THEN 'http://example.com/story' END,
			CASE WHEN $2 = 'link.rewritten' THEN 'Old headline' END,
			CASE WHEN $2 = 'link.rewritten' THEN 'New headline' END,
			CASE WHEN $2 = 'page.degraded' THEN 'blocked' END,
			CASE WHEN $2 = 'page.degraded' THEN 'the page answered 403 Forbidden' END
		RETURNING id`, page, string(kind)).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// check writes, in one transaction as one check would, n updates of page
// and then an event of each kind given, and waits until they are under the
// horizon. It returns the ids of its rows in the order written.
func check(t *testing.T, pool *pgxpool.Pool, page int64, n int, kinds ...watch.EventKind) []int64 {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		prefix := fmt.Sprintf("http://example.com/%d/%d/", page, time.Now().UnixNano())
		rows, err := tx.Query(ctx, insertUpdate+` RETURNING id`, page, prefix, n)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		slices.Sort(got)
		ids = append(ids, got...)
		for _, k := range kinds {
			ids = append(ids, insertEvent(t, tx, page, k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	settleEvents(t, pool)
	return ids
}

// settleEvents waits until every update and event written so far is under
// the horizon (see settle).
func settleEvents(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	settle(t, pool)
	err := testsvc.Poll(context.Background(), 3*time.Minute, testsvc.PollInterval, func() (bool, string, error) {
		var final bool
		err := pool.QueryRow(context.Background(), `SELECT coalesce(max(xact) < pg_snapshot_xmin(pg_current_snapshot()), true) FROM events`).Scan(&final)
		return final, "events under the horizon", err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// batchIDs are the ids of a batch, its updates first, then its events.
func batchIDs(b watch.Batch) []int64 {
	ids := updateIDs(b)
	for _, e := range b.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// drain claims and delivers sub's batches until nothing is pending, and
// returns each batch's ids and type.
func drain(t *testing.T, st *store.Store, sub int64, max int) []string {
	t.Helper()
	ctx := context.Background()
	var got []string
	for range 20 {
		l, ok := claimOne(t, st)
		if !ok {
			return got
		}
		if l.Subscription.ID != sub {
			t.Fatalf("claimed subscription %d, want %d", l.Subscription.ID, sub)
		}
		b, err := st.PendingBatch(ctx, l, max)
		if err != nil {
			t.Fatal(err)
		}
		again, err := st.PendingBatch(ctx, l, max)
		if err != nil {
			t.Fatal(err)
		}
		if b.ID != again.ID || fmt.Sprint(batchIDs(b)) != fmt.Sprint(batchIDs(again)) {
			t.Fatalf("one cursor gave %s %v, then %s %v", b.ID, batchIDs(b), again.ID, batchIDs(again))
		}
		got = append(got, fmt.Sprintf("%s%v", b.Type(), batchIDs(b)))
		if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{ResponseCode: 204}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("still pending after 20 batches")
	return nil
}

func ids(t string, ids ...int64) string { return fmt.Sprintf("%s%v", t, ids) }

// TestNotifyEventsInOrderWithUpdates: a subscription's stream is its
// updates and the events of the kinds it asked for, in the order their
// checks committed; without a digest each check's updates are one message
// and each event one of its own, of its kind; a kind not asked for is
// never sent; a digest takes all of them in one message, updates and
// events alike.
func TestNotifyEventsInOrderWithUpdates(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	hook, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/",
		Events: []watch.EventKind{watch.PageDegraded, watch.LinkRewritten}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hook.Events, []watch.EventKind{watch.LinkRewritten, watch.PageDegraded}) {
		t.Fatalf("stored events %v, want them in EventKinds' order", hook.Events)
	}
	// The first check: two new links and a rewritten headline, with a
	// recovery the subscription did not ask for; then a check that finds
	// the page blocked; then one with a new link.
	first := check(t, pool, page, 2, watch.LinkRewritten, watch.PageRecovered)
	blocked := check(t, pool, page, 0, watch.PageDegraded)
	last := check(t, pool, page, 1)
	got := drain(t, st, hook.ID, 100)
	want := []string{ids("updates.created", first[:2]...), ids("link.rewritten", first[2]), ids("page.degraded", blocked[0]),
		ids("updates.created", last[0])}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages %v, want %v", got, want)
	}

	// A digest of every kind, added after those: a check after it is all
	// it is sent, in one message.
	mail, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Email, Target: "desk@example.com", Digest: watch.DigestDaily,
		Events: watch.EventKinds})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSubscriptionEvents(ctx, hook.ID, nil); err != nil {
		t.Fatal(err)
	}
	more := check(t, pool, page, 2, watch.PageRecovered)
	// The webhook, now without events, is sent the updates only (the
	// digest waits for its day); the digest the updates and the recovery.
	if got := drain(t, st, hook.ID, 100); fmt.Sprint(got) != fmt.Sprint([]string{ids("updates.created", more[:2]...)}) {
		t.Fatalf("webhook without events: messages %v, want the updates only", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET next_attempt_at = now() WHERE id = $1`, mail.ID); err != nil {
		t.Fatal(err)
	}
	l, ok := claimOne(t, st)
	if !ok || l.Subscription.ID != mail.ID {
		t.Fatalf("claim of the digest: %+v %v", l, ok)
	}
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(batchIDs(b)) != fmt.Sprint(more) || b.Type() != watch.TypeUpdatesCreated {
		t.Fatalf("digest %s%v, want updates.created%v", b.Type(), batchIDs(b), more)
	}
	ev := b.Events[0]
	if ev.Kind != watch.PageRecovered || ev.PageID != page || ev.At.IsZero() || b.Pages[page].URL != "http://example.com/" {
		t.Fatalf("digest event %+v, pages %+v", ev, b.Pages)
	}
	// A digest capped at 2 ends before the event, and the next starts
	// with it.
	capped, err := st.PendingBatch(ctx, l, 2)
	if err != nil || len(capped.Updates) != 2 || len(capped.Events) != 0 {
		t.Fatalf("capped digest %v (%v), want its 2 updates", batchIDs(capped), err)
	}
	if err := st.CompleteDelivery(ctx, l, capped, watch.Attempt{ResponseCode: 250}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET next_attempt_at = now() WHERE id = $1`, mail.ID); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, st, mail.ID, 2); fmt.Sprint(got) != fmt.Sprint([]string{ids("page.recovered", more[2])}) {
		t.Fatalf("after the capped digest: %v, want the recovery", got)
	}
}

// TestNotifyEventsInScope: a subscription to a page or a tag is sent the
// events of its pages only, and the event carries what each kind says.
func TestNotifyEventsInScope(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	tagged, other := addPage(t, st, "http://tagged.example/"), addPage(t, st, "http://other.example/")
	if _, err := pool.Exec(ctx, `UPDATE pages SET tags = '{press}' WHERE id = $1`, tagged); err != nil {
		t.Fatal(err)
	}
	byTag, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/tag", Tag: "press",
		Events: watch.EventKinds})
	if err != nil {
		t.Fatal(err)
	}
	check(t, pool, other, 0, watch.PageDegraded, watch.LinkRewritten)
	mine := check(t, pool, tagged, 0, watch.LinkRewritten)
	got := drain(t, st, byTag.ID, 100)
	if fmt.Sprint(got) != fmt.Sprint([]string{ids("link.rewritten", mine[0])}) {
		t.Fatalf("tag subscription: %v, want the tagged page's event only", got)
	}

	byPage, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/page", PageID: other,
		Events: []watch.EventKind{watch.PageDegraded}})
	if err != nil {
		t.Fatal(err)
	}
	check(t, pool, tagged, 0, watch.PageDegraded)
	theirs := check(t, pool, other, 0, watch.PageDegraded, watch.LinkRewritten)
	// The tag subscription has the tagged page's degradation pending too:
	// take it out of the way first.
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET paused_at = now() WHERE id = $1`, byTag.ID); err != nil {
		t.Fatal(err)
	}
	l, ok := claimOne(t, st)
	if !ok || l.Subscription.ID != byPage.ID {
		t.Fatalf("claim: %+v %v, want the page subscription", l, ok)
	}
	b, err := st.PendingBatch(ctx, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Events) != 1 || b.Events[0].ID != theirs[0] {
		t.Fatalf("page subscription: %v, want [%d]", batchIDs(b), theirs[0])
	}
	e := b.Events[0]
	if e.Kind != watch.PageDegraded || e.Reason != watch.Blocked || e.Detail != "the page answered 403 Forbidden" ||
		b.Pages[other].URL != "http://other.example/" || b.Pages[other].ID != other {
		t.Fatalf("event %+v, page %+v", e, b.Pages[other])
	}
}

// TestNotifyIdleCursorsKeepPendingEvents: a subscription with only events
// of its kinds pending is claimed and its cursor is not moved past them as
// idle; one without kinds, or with other kinds, is idle over them.
func TestNotifyIdleCursorsKeepPendingEvents(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := addPage(t, st, "http://example.com/")
	wants, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/wants", PageID: page,
		Events: []watch.EventKind{watch.PageRecovered}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/plain", PageID: page})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: "http://hook.example/other",
		Events: []watch.EventKind{watch.LinkRewritten}})
	if err != nil {
		t.Fatal(err)
	}
	cursor := func(id int64) string {
		var c string
		if err := pool.QueryRow(ctx, `SELECT cursor_xact::text || ':' || cursor_id FROM subscriptions WHERE id = $1`, id).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := map[int64]string{wants.ID: cursor(wants.ID), plain.ID: cursor(plain.ID), other.ID: cursor(other.ID)}
	recovered := check(t, pool, page, 0, watch.PageRecovered)
	if n, err := st.AdvanceIdleCursors(ctx); err != nil || n != 2 {
		t.Fatalf("advance: moved %d (%v), want the 2 subscriptions without page.recovered", n, err)
	}
	if cursor(wants.ID) != before[wants.ID] || cursor(plain.ID) == before[plain.ID] || cursor(other.ID) == before[other.ID] {
		t.Fatalf("cursors %v, then %s %s %s: want only the one with page.recovered kept", before, cursor(wants.ID), cursor(plain.ID), cursor(other.ID))
	}
	if got := drain(t, st, wants.ID, 100); fmt.Sprint(got) != fmt.Sprint([]string{ids("page.recovered", recovered[0])}) {
		t.Fatalf("messages %v, want the recovery", got)
	}
}
