package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Notifications: each subscription keeps a cursor (xact, id) into updates
// (see migrations/00005_notifier.sql for why the transaction id). Rows are read
// only below the horizon pg_snapshot_xmin(pg_current_snapshot()), under which
// every writing transaction has ended, so the rows past a cursor can only
// grow at the end: the next batch computed from a cursor is always the same.

// horizon is the SQL of the xact below which rows are final.
const horizon = `pg_snapshot_xmin(pg_current_snapshot())`

// hasPending is the SQL condition that subscription s has updates or
// events of the kinds it asked for to deliver: past its cursor, under the
// horizon, in its scope. Each kind of scope has its own subqueries so that
// each uses its index. The events are looked at only when no update is
// pending and s asked for some kind: OR and AND are evaluated left to
// right and stop at the first answer, so a subscription without kinds
// never reads events.
var hasPending = `CASE
	WHEN s.page_id IS NOT NULL THEN EXISTS (
		SELECT 1 FROM updates u WHERE u.page_id = s.page_id
			AND (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
		OR (s.events <> '{}' AND ` + firstEvent(``, `e.page_id = s.page_id`) + `)
	WHEN s.tag IS NOT NULL THEN EXISTS (
		SELECT 1 FROM updates u JOIN pages p ON p.id = u.page_id
		WHERE s.tag = ANY (p.tags)
			AND (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
		OR (s.events <> '{}' AND ` + firstEvent(`JOIN pages p ON p.id = e.page_id`, `s.tag = ANY (p.tags)`) + `)
	ELSE EXISTS (
		SELECT 1 FROM updates u
		WHERE (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
		OR (s.events <> '{}' AND ` + firstEvent(``, `true`) + `)
	END`

// firstEvent is the SQL condition that subscription s has an event of
// its kinds pending in the scope that scope says, over events e and what
// join adds. It asks for the first such event in (xact, id) order
// rather than whether one EXISTS: the planner guesses that a third of
// the events lie past a cursor, and for EXISTS it would then scan the
// table from its start, expecting to meet one soon, where an idle cursor
// has none past it. In this form it walks events_xact or
// events_page_xact from the cursor.
func firstEvent(join, scope string) string {
	return `(SELECT e.id FROM events e ` + join + `
			WHERE ` + scope + ` AND e.kind = ANY (s.events)
				AND (e.xact, e.id) > (s.cursor_xact, s.cursor_id) AND e.xact < ` + horizon + `
			ORDER BY e.xact, e.id LIMIT 1) IS NOT NULL`
}

// AdvanceIdleCursors moves the cursor of every subscription that has
// nothing to deliver and is not leased up to the horizon, and returns how
// many it moved. It skips nothing: in the statement's one snapshot no
// update or event of their kinds under the horizon is pending for them,
// and none can appear there later. Without it, a subscription to a quiet tag or page would have
// every claim scan all updates since its last delivery.
func (s *Store) AdvanceIdleCursors(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE subscriptions s SET cursor_xact = `+horizon+`, cursor_id = 0
		WHERE s.cursor_xact < `+horizon+` AND (s.lease_until IS NULL OR s.lease_until < now())
			AND NOT `+hasPending)
	if err != nil {
		return 0, fmt.Errorf("advance idle cursors: %w", err)
	}
	return tag.RowsAffected(), nil
}

// KeptDeliveries is how many delivery log entries a subscription keeps.
const KeptDeliveries = 100

// AddSubscription stores a subscription; it is sent what is found from now
// on. It returns watch.ErrPageNotFound when s.PageID names no page, and a
// *watch.RefusedError for a WaitArticle out of bounds. The caller has
// validated the target (internal/registration).
func (s *Store) AddSubscription(ctx context.Context, sub watch.Subscription) (watch.Subscription, error) {
	if sub.Digest == "" {
		sub.Digest = watch.DigestNone
	}
	if err := watch.CheckWaitArticle(sub.WaitArticle); err != nil {
		return watch.Subscription{}, &watch.RefusedError{Field: "wait_article", Err: fmt.Errorf("wait_article %s: %w", sub.WaitArticle, err)}
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO subscriptions (channel, target, secret, digest, page_id, tag, next_attempt_at, wait_article, events)
		VALUES ($1, $2, $3, $4, nullif($5, 0), nullif($6, ''), `+nextSlot("$4")+`, $7 * interval '1 millisecond', $8)
		RETURNING `+subscriptionColumns,
		sub.Channel, sub.Target, sub.Secret, sub.Digest, sub.PageID, sub.Tag, sub.WaitArticle.Milliseconds(), kindWords(sub.Events))
	out, err := scanSubscription(row)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return watch.Subscription{}, fmt.Errorf("subscribe to page %d: %w", sub.PageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Subscription{}, fmt.Errorf("add subscription for %s: %w", sub.Target, err)
	}
	return out, nil
}

// nextSlot is the SQL of when a subscription with digest d (an SQL
// expression) may next be sent a message: now, or the start of the next
// hour or day (UTC).
func nextSlot(d string) string {
	return `CASE ` + d + `
		WHEN 'hourly' THEN (date_trunc('hour', now() AT TIME ZONE 'UTC') + interval '1 hour') AT TIME ZONE 'UTC'
		WHEN 'daily'  THEN (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
		ELSE now() END`
}

// SetSubscriptionEvents replaces the kinds of event subscription id is
// sent besides updates and returns it, or watch.ErrSubscriptionNotFound.
// Its cursor stays: events of a kind added that were recorded past it are
// sent too, and those of a kind removed that are past it are not.
func (s *Store) SetSubscriptionEvents(ctx context.Context, id int64, kinds []watch.EventKind) (watch.Subscription, error) {
	sub, err := scanSubscription(s.pool.QueryRow(ctx, `UPDATE subscriptions SET events = $2 WHERE id = $1 RETURNING `+subscriptionColumns,
		id, kindWords(kinds)))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Subscription{}, fmt.Errorf("subscription %d: %w", id, watch.ErrSubscriptionNotFound)
	}
	if err != nil {
		return watch.Subscription{}, fmt.Errorf("set the events of subscription %d: %w", id, err)
	}
	return sub, nil
}

// kindWords returns kinds as events.kind writes them, in EventKinds'
// order, each once; never nil, as subscriptions.events is NOT NULL.
func kindWords(kinds []watch.EventKind) []string {
	words := []string{}
	for _, k := range watch.SortedEventKinds(kinds) {
		words = append(words, string(k))
	}
	return words
}

// Subscription returns one subscription, or watch.ErrSubscriptionNotFound.
func (s *Store) Subscription(ctx context.Context, id int64) (watch.Subscription, error) {
	sub, err := scanSubscription(s.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Subscription{}, fmt.Errorf("subscription %d: %w", id, watch.ErrSubscriptionNotFound)
	}
	if err != nil {
		return watch.Subscription{}, fmt.Errorf("load subscription %d: %w", id, err)
	}
	return sub, nil
}

// Subscriptions returns every subscription in id order with its newest
// delivery log entry.
func (s *Store) Subscriptions(ctx context.Context) ([]watch.SubscriptionStatus, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+subscriptionColumns+`, coalesce(d.message_id, ''), coalesce(d.update_count, 0),
			coalesce(d.status, ''), coalesce(d.attempts, 0), d.last_attempt_at,
			coalesce(d.response_code, 0), coalesce(d.last_error, '')
		FROM subscriptions
		LEFT JOIN LATERAL (
			SELECT * FROM deliveries WHERE subscription_id = subscriptions.id
			ORDER BY last_attempt_at DESC LIMIT 1
		) d ON true
		ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.SubscriptionStatus, error) {
		var (
			st      watch.SubscriptionStatus
			at      *time.Time
			status  string
			fields  = subscriptionFields(&st.Subscription)
			scanned = new(subscriptionScan)
		)
		err := r.Scan(append(scanned.targets(fields), &st.Last.MessageID, &st.Last.UpdateCount, &status,
			&st.Last.Attempts, &at, &st.Last.ResponseCode, &st.Last.LastError)...)
		if err != nil {
			return st, err
		}
		scanned.apply(&st.Subscription)
		st.Last.SubscriptionID, st.Last.Status = st.ID, watch.DeliveryStatus(status)
		if at != nil {
			st.Last.LastAttemptAt = *at
		}
		return st, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	return list, nil
}

// Deliveries returns a subscription's delivery log, newest first, at most
// limit entries (KeptDeliveries are kept).
func (s *Store) Deliveries(ctx context.Context, id int64, limit int) ([]watch.DeliveryLogEntry, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT subscription_id, message_id, update_count, status, attempts, last_attempt_at, response_code, last_error
		FROM deliveries WHERE subscription_id = $1 ORDER BY last_attempt_at DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("delivery log of subscription %d: %w", id, err)
	}
	log, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.DeliveryLogEntry, error) {
		var d watch.DeliveryLogEntry
		var status string
		err := r.Scan(&d.SubscriptionID, &d.MessageID, &d.UpdateCount, &status, &d.Attempts, &d.LastAttemptAt, &d.ResponseCode, &d.LastError)
		d.Status = watch.DeliveryStatus(status)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("delivery log of subscription %d: %w", id, err)
	}
	return log, nil
}

// RemoveSubscription deletes a subscription and its delivery log, or
// returns watch.ErrSubscriptionNotFound.
func (s *Store) RemoveSubscription(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM subscriptions WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("remove subscription %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("subscription %d: %w", id, watch.ErrSubscriptionNotFound)
	}
	return nil
}

// ResumeSubscription clears a subscription's pause and failure count so
// that it is tried again at once, or returns watch.ErrSubscriptionNotFound.
func (s *Store) ResumeSubscription(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE subscriptions SET paused_at = NULL, paused_reason = NULL, attempts = 0,
			failing_since = NULL, next_attempt_at = now()
		WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("resume subscription %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("subscription %d: %w", id, watch.ErrSubscriptionNotFound)
	}
	return nil
}

// ClaimSubscriptions leases up to n active subscriptions that are due and
// have updates to deliver, for the duration lease, skipping those another
// notifier holds (FOR UPDATE SKIP LOCKED; the lock lasts only this
// statement, the lease keeps others off afterwards). The longest-waiting
// subscriptions come first and every delivery moves a subscription's
// next_attempt_at forward, so none starves the others.
func (s *Store) ClaimSubscriptions(ctx context.Context, n int, lease time.Duration) ([]watch.Lease, error) {
	token := rand.Int64()
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT s.id AS due_id FROM subscriptions s
			WHERE s.paused_at IS NULL AND s.next_attempt_at <= now()
				AND (s.lease_until IS NULL OR s.lease_until < now())
				AND `+hasPending+`
			ORDER BY s.next_attempt_at, s.id
			LIMIT $1
			FOR UPDATE OF s SKIP LOCKED
		)
		UPDATE subscriptions SET lease_until = now() + $2 * interval '1 millisecond', lease_token = $3
		FROM due WHERE id = due_id
		RETURNING `+subscriptionColumns+`, cursor_xact::text || ':' || cursor_id, attempts, failing_since`,
		n, lease.Milliseconds(), token)
	if err != nil {
		return nil, fmt.Errorf("claim subscriptions: %w", err)
	}
	leases, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Lease, error) {
		l := watch.Lease{Token: token}
		scanned := new(subscriptionScan)
		var failing *time.Time
		err := r.Scan(append(scanned.targets(subscriptionFields(&l.Subscription)), &l.Cursor, &l.Attempts, &failing)...)
		scanned.apply(&l.Subscription)
		if failing != nil {
			l.FailingSince = *failing
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim subscriptions: %w", err)
	}
	return leases, nil
}

// PendingBatch returns the next message of a leased subscription from its
// pending stream: the updates past its cursor and the events of the kinds
// it asked for, in (xact, id) order. Without a digest a message is the
// updates that the first pending check wrote (one page's, in one
// transaction) or one event; a digest takes every pending update and
// event. A batch holds at most max of them; one that would exceed max is
// cut, and the rest follows as the next batch. An empty batch
// (Batch.Empty) means nothing is pending.
func (s *Store) PendingBatch(ctx context.Context, l watch.Lease, max int) (watch.Batch, error) {
	xact, id, err := parseCursor(l.Cursor)
	if err != nil {
		return watch.Batch{}, err
	}
	sub := l.Subscription
	var (
		updates []pendingUpdate
		events  []pendingEvent
	)
	if len(sub.Events) == 0 {
		// No events asked for: one statement, as before events existed.
		updates, err = pendingUpdates(ctx, s.pool, sub, xact, id, max)
	} else {
		// Both reads must see one horizon: read each under its own, and
		// an update under the second but not the first, ordered before
		// an event taken, would be passed over by the cursor for good.
		// A repeatable read transaction gives both one snapshot, and a
		// read-only one holds no transaction id, so it holds back no
		// horizon.
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			if updates, err = pendingUpdates(ctx, tx, sub, xact, id, max); err != nil {
				return err
			}
			events, err = pendingEvents(ctx, tx, sub, xact, id, max)
			return err
		})
	}
	if err != nil {
		return watch.Batch{}, err
	}
	b := watch.Batch{Pages: map[int64]watch.NotifiedPage{}}
	var (
		last      position // of the newest row taken
		firstKind = 0      // 1: the batch starts with an update, 2: with an event
		taken     int
	)
	for taken < max && (len(updates) > 0 || len(events) > 0) {
		if len(events) == 0 || len(updates) > 0 && updates[0].pos.before(events[0].pos) {
			u := updates[0]
			// Without a digest a message holds one check: the run of
			// rows that one transaction wrote for one page. The rest
			// waits for the next batch, which starts where this one ends.
			if sub.Digest == watch.DigestNone && firstKind != 0 &&
				(firstKind == 2 || u.pos.xact != last.xact || u.update.PageID != b.Updates[0].PageID) {
				break
			}
			updates = updates[1:]
			b.Pages[u.update.PageID] = u.page
			b.Updates = append(b.Updates, u.update)
			last = u.pos
			firstKind = cmp.Or(firstKind, 1)
		} else {
			e := events[0]
			// An event is a message of its own, unless in a digest.
			if sub.Digest == watch.DigestNone && firstKind != 0 {
				break
			}
			events = events[1:]
			b.Pages[e.event.PageID] = e.page
			b.Events = append(b.Events, e.event)
			last = e.pos
			firstKind = cmp.Or(firstKind, 2)
		}
		taken++
	}
	if b.Empty() {
		return watch.Batch{}, nil
	}
	// The id names the subscription and the cursor the batch starts from:
	// the same cursor always yields the same batch.
	b.ID = fmt.Sprintf("msg_%d_%s_%d", sub.ID, xact, id)
	b.Next = strconv.FormatUint(last.xact, 10) + ":" + strconv.FormatInt(last.id, 10)
	return b, nil
}

// position is the place of a row in the stream of a subscription: (xact, id).
type position struct {
	xact uint64
	id   int64
}

func (p position) before(q position) bool {
	return p.xact < q.xact || p.xact == q.xact && p.id < q.id
}

// positionOf reads the xact (xid8 as text) and the id of a row.
func positionOf(xact string, id int64) (position, error) {
	x, err := strconv.ParseUint(xact, 10, 64)
	if err != nil {
		return position{}, fmt.Errorf("transaction id %q: %w", xact, err)
	}
	return position{xact: x, id: id}, nil
}

type pendingUpdate struct {
	pos    position
	update watch.Update
	page   watch.NotifiedPage
}

type pendingEvent struct {
	pos   position
	event watch.Event
	page  watch.NotifiedPage
}

// streamReader is the pool or a transaction, for the reads of a
// subscription's stream.
type streamReader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pendingScope returns the SQL condition and its argument ($3) of sub's
// scope on rows of alias (u or e) joined with pages p. Each kind of scope
// has its own statement, so that each is planned with the index it
// needs: a generic plan of "$3 IS NULL OR page_id = $3" would scan every
// page's rows past the cursor.
func pendingScope(sub watch.Subscription, alias string) (string, any) {
	switch {
	case sub.PageID != 0:
		return alias + ".page_id = $3", sub.PageID
	case sub.Tag != "":
		return "$3::text = ANY (p.tags)", sub.Tag
	}
	return "$3::bigint IS NULL", nil
}

// pendingUpdates returns the first max updates past the cursor (xact, id)
// in sub's scope, under the horizon, in (xact, id) order.
func pendingUpdates(ctx context.Context, q streamReader, sub watch.Subscription, xact string, id int64, max int) ([]pendingUpdate, error) {
	scope, arg := pendingScope(sub, "u")
	// Each update carries its article as the API shows it in lists (no
	// body): the stored one, or status pending while article_work holds
	// its URL. The statement reads both in one snapshot, and the
	// extractor writes the article and deletes the work in one
	// transaction, so an update is never seen with neither.
	rows, err := q.Query(ctx, `
		SELECT u.id, u.page_id, u.url, u.text, u.code, u.discovered_at, u.summary, u.burst, `+placeColumns+`, u.xact::text, p.base_url,
			`+displayNameSQL+`, `+articlePendingSQL+`,
			`+articleColumns(false)+`
		FROM updates u JOIN pages p ON p.id = u.page_id `+articleJoinSQL+`
		WHERE (u.xact, u.id) > ($1::xid8, $2::bigint) AND u.xact < `+horizon+` AND `+scope+`
		ORDER BY u.xact, u.id
		LIMIT $4`,
		xact, id, arg, max)
	if err != nil {
		return nil, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
	}
	defer rows.Close()
	var list []pendingUpdate
	for rows.Next() {
		var (
			p       pendingUpdate
			u       = &p.update
			uXact   string
			pending bool
			article articleScan
		)
		dest := append(append([]any{&u.ID, &u.PageID, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt, &u.Summary, &u.Burst}, placeDest(u)...),
			&uXact, &p.page.URL, &p.page.Name, &pending)
		if err := rows.Scan(append(dest, article.dest()...)...); err != nil {
			return nil, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
		}
		if u.Article, err = article.articleOf(pending, u.URL); err != nil {
			return nil, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
		}
		if p.pos, err = positionOf(uXact, u.ID); err != nil {
			return nil, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
		}
		p.page.ID, u.PageName = u.PageID, p.page.Name
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
	}
	return list, nil
}

// pendingEvents returns the first max events of sub's kinds past the
// cursor (xact, id) in its scope, under the horizon, in (xact, id) order.
// By page it walks events_page_xact; by tag and for all pages,
// events_xact, joining pages as pendingUpdates does.
func pendingEvents(ctx context.Context, q streamReader, sub watch.Subscription, xact string, id int64, max int) ([]pendingEvent, error) {
	scope, arg := pendingScope(sub, "e")
	rows, err := q.Query(ctx, `
		SELECT e.id, e.page_id, e.kind, e.at, coalesce(e.url, ''), coalesce(e.old_text, ''), coalesce(e.new_text, ''),
			coalesce(e.reason, ''), coalesce(e.detail, ''), e.xact::text, p.base_url, `+displayNameSQL+`
		FROM events e JOIN pages p ON p.id = e.page_id
		WHERE (e.xact, e.id) > ($1::xid8, $2::bigint) AND e.xact < `+horizon+` AND `+scope+` AND e.kind = ANY ($5::text[])
		ORDER BY e.xact, e.id
		LIMIT $4`,
		xact, id, arg, max, kindWords(sub.Events))
	if err != nil {
		return nil, fmt.Errorf("pending events of subscription %d: %w", sub.ID, err)
	}
	defer rows.Close()
	var list []pendingEvent
	for rows.Next() {
		var (
			p      pendingEvent
			e      = &p.event
			kind   string
			reason string
			eXact  string
		)
		if err := rows.Scan(&e.ID, &e.PageID, &kind, &e.At, &e.URL, &e.OldText, &e.NewText, &reason, &e.Detail,
			&eXact, &p.page.URL, &p.page.Name); err != nil {
			return nil, fmt.Errorf("pending events of subscription %d: %w", sub.ID, err)
		}
		e.Kind, e.Reason = watch.EventKind(kind), watch.Degradation(reason)
		if p.pos, err = positionOf(eXact, e.ID); err != nil {
			return nil, fmt.Errorf("pending events of subscription %d: %w", sub.ID, err)
		}
		p.page.ID = e.PageID
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending events of subscription %d: %w", sub.ID, err)
	}
	return list, nil
}

// CompleteDelivery records that batch b of lease l was delivered: the
// subscription's cursor moves past it, its failures are forgotten, its
// lease ends, and it is due again at once (a digest: at its next hour or
// day). The log entry is written in the same transaction. It returns
// watch.ErrLeaseLost when another notifier has taken the subscription over
// or moved its cursor; nothing is then changed.
func (s *Store) CompleteDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) error {
	xact, id, err := parseCursor(l.Cursor)
	if err != nil {
		return err
	}
	nextXact, nextID, err := parseCursor(b.Next)
	if err != nil {
		return err
	}
	first, last := b.IDRange()
	var n int
	err = s.pool.QueryRow(ctx, `
		WITH moved AS (
			UPDATE subscriptions SET cursor_xact = $5::xid8, cursor_id = $6, lease_until = NULL, lease_token = NULL,
				attempts = 0, failing_since = NULL, next_attempt_at = `+nextSlot("digest")+`
			WHERE id = $1 AND lease_token = $2 AND cursor_xact = $3::xid8 AND cursor_id = $4
			RETURNING id
		), logged AS (
			`+logDelivery("moved", "'delivered'")+`
		), pruned AS (
			DELETE FROM deliveries WHERE subscription_id IN (SELECT id FROM moved) AND last_attempt_at < (
				SELECT last_attempt_at FROM deliveries WHERE subscription_id = $1
				ORDER BY last_attempt_at DESC OFFSET `+strconv.Itoa(KeptDeliveries-2)+` LIMIT 1)
		)
		SELECT count(*) FROM moved`,
		l.Subscription.ID, l.Token, xact, id, nextXact, nextID,
		b.ID, len(b.Updates), first, last, a.ResponseCode, a.Error).Scan(&n)
	if err != nil {
		return fmt.Errorf("record delivery %s: %w", b.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("record delivery %s: %w", b.ID, watch.ErrLeaseLost)
	}
	return nil
}

// logDelivery is the SQL that upserts batch $7..$12's log entry for the
// subscription that CTE from returned, with the given status; attempts
// count up across retries of one message. update_count counts the
// updates only, and the first and last ids span its events too.
func logDelivery(from, status string) string {
	return `INSERT INTO deliveries AS d (subscription_id, message_id, update_count, first_update_id, last_update_id,
				status, attempts, response_code, last_error)
			SELECT id, $7, $8, $9, $10, ` + status + `, 1, $11, $12 FROM ` + from + `
			ON CONFLICT (subscription_id, message_id) DO UPDATE SET
				status = excluded.status, attempts = d.attempts + 1, last_attempt_at = now(),
				response_code = excluded.response_code, last_error = excluded.last_error
			RETURNING 1`
}

// FailDelivery records a failed attempt to deliver batch b of lease l: the
// lease ends and the subscription is due again at a.RetryAt, or it is
// paused with a.Error as its reason when a.PauseNow or when its pending
// message has failed for a.PauseAfter. It reports whether it paused the
// subscription, and returns watch.ErrLeaseLost when another notifier has
// taken the subscription over.
func (s *Store) FailDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) (paused bool, err error) {
	first, last := b.IDRange()
	err = s.pool.QueryRow(ctx, `
		WITH failed AS (
			UPDATE subscriptions SET lease_until = NULL, lease_token = NULL, attempts = attempts + 1,
				failing_since = coalesce(failing_since, now()), next_attempt_at = $3,
				paused_at     = CASE WHEN $4 OR failing_since <= now() - $5 * interval '1 millisecond' THEN now() END,
				paused_reason = CASE WHEN $4 OR failing_since <= now() - $5 * interval '1 millisecond' THEN $6 END
			WHERE id = $1 AND lease_token = $2
			RETURNING id, paused_at IS NOT NULL AS paused
		), logged AS (
			`+logDelivery("failed", "CASE WHEN failed.paused THEN 'paused' ELSE 'failed' END")+`
		)
		SELECT paused FROM failed`,
		l.Subscription.ID, l.Token, a.RetryAt, a.PauseNow, a.PauseAfter.Milliseconds(), a.Error,
		b.ID, len(b.Updates), first, last, a.ResponseCode, a.Error).Scan(&paused)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("record failed delivery %s: %w", b.ID, watch.ErrLeaseLost)
	}
	if err != nil {
		return false, fmt.Errorf("record failed delivery %s: %w", b.ID, err)
	}
	return paused, nil
}

// HoldDelivery gives back lease l without an attempt, its message held
// for the articles of its updates (watch.Batch.ArticleHold): the
// subscription is due again at until, and its cursor, failures and log
// stay as they are. It returns watch.ErrLeaseLost when another notifier
// has taken the subscription over.
func (s *Store) HoldDelivery(ctx context.Context, l watch.Lease, until time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE subscriptions SET lease_until = NULL, lease_token = NULL, next_attempt_at = $3
		WHERE id = $1 AND lease_token = $2`, l.Subscription.ID, l.Token, until)
	if err != nil {
		return fmt.Errorf("hold subscription %d: %w", l.Subscription.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("hold subscription %d: %w", l.Subscription.ID, watch.ErrLeaseLost)
	}
	return nil
}

// ReleaseLease gives a subscription back without recording an attempt, as
// a notifier does when it stops before a delivery ended; another notifier
// may claim it at once. A lease already lost is not an error.
func (s *Store) ReleaseLease(ctx context.Context, l watch.Lease) error {
	_, err := s.pool.Exec(ctx, `UPDATE subscriptions SET lease_until = NULL, lease_token = NULL WHERE id = $1 AND lease_token = $2`,
		l.Subscription.ID, l.Token)
	if err != nil {
		return fmt.Errorf("release subscription %d: %w", l.Subscription.ID, err)
	}
	return nil
}

func parseCursor(c string) (xact string, id int64, err error) {
	xact, rest, ok := strings.Cut(c, ":")
	if ok {
		id, err = strconv.ParseInt(rest, 10, 64)
	}
	if !ok || err != nil || xact == "" {
		return "", 0, fmt.Errorf("malformed notification cursor %q", c)
	}
	return xact, id, nil
}

const subscriptionColumns = `id, channel, target, secret, digest, coalesce(page_id, 0), coalesce(tag, ''),
	created_at, paused_at, coalesce(paused_reason, ''), (extract(epoch FROM wait_article) * 1000)::bigint, events`

// subscriptionScan holds the columns that need converting after the scan.
type subscriptionScan struct {
	channel, digest string
	paused          *time.Time
	waitMS          int64
	events          []string
}

func subscriptionFields(sub *watch.Subscription) []any {
	return []any{&sub.ID, nil, &sub.Target, &sub.Secret, nil, &sub.PageID, &sub.Tag, &sub.CreatedAt, nil, &sub.PausedReason, nil, nil}
}

// targets fills the conversion slots (the nils) of fields with its own.
func (sc *subscriptionScan) targets(fields []any) []any {
	fields[1], fields[4], fields[8], fields[10], fields[11] = &sc.channel, &sc.digest, &sc.paused, &sc.waitMS, &sc.events
	return fields
}

func (sc *subscriptionScan) apply(sub *watch.Subscription) {
	sub.Channel, sub.Digest = watch.Channel(sc.channel), watch.Digest(sc.digest)
	sub.WaitArticle = time.Duration(sc.waitMS) * time.Millisecond
	if sc.paused != nil {
		sub.PausedAt = *sc.paused
	}
	sub.Events = nil
	for _, k := range sc.events {
		sub.Events = append(sub.Events, watch.EventKind(k))
	}
}

func scanSubscription(row pgx.Row) (watch.Subscription, error) {
	var sub watch.Subscription
	sc := new(subscriptionScan)
	if err := row.Scan(sc.targets(subscriptionFields(&sub))...); err != nil {
		return watch.Subscription{}, err
	}
	sc.apply(&sub)
	return sub, nil
}
