package store

import (
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

// hasPending is the SQL condition that subscription s has updates to
// deliver: past its cursor, under the horizon, in its scope. Each kind of
// scope has its own subquery so that each uses its index.
const hasPending = `CASE
	WHEN s.page_id IS NOT NULL THEN EXISTS (
		SELECT 1 FROM updates u WHERE u.page_id = s.page_id
			AND (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
	WHEN s.tag IS NOT NULL THEN EXISTS (
		SELECT 1 FROM updates u JOIN pages p ON p.id = u.page_id
		WHERE s.tag = ANY (p.tags)
			AND (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
	ELSE EXISTS (
		SELECT 1 FROM updates u
		WHERE (u.xact, u.id) > (s.cursor_xact, s.cursor_id) AND u.xact < ` + horizon + `)
	END`

// AdvanceIdleCursors moves the cursor of every subscription that has
// nothing to deliver and is not leased up to the horizon, and returns how
// many it moved. It skips nothing: in the statement's one snapshot no
// update under the horizon is pending for them, and none can appear there
// later. Without it, a subscription to a quiet tag or page would have
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
		INSERT INTO subscriptions (channel, target, secret, digest, page_id, tag, next_attempt_at, wait_article)
		VALUES ($1, $2, $3, $4, nullif($5, 0), nullif($6, ''), `+nextSlot("$4")+`, $7 * interval '1 millisecond')
		RETURNING `+subscriptionColumns,
		sub.Channel, sub.Target, sub.Secret, sub.Digest, sub.PageID, sub.Tag, sub.WaitArticle.Milliseconds())
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

// PendingBatch returns the next message of a leased subscription: the
// updates past its cursor that the first pending check wrote (one page's,
// in one transaction), or for a digest every pending update, at most max
// of them in (xact, id) order. A batch that would exceed max is cut, and the rest
// follows as the next batch. An empty batch (Updates nil) means nothing is
// pending.
func (s *Store) PendingBatch(ctx context.Context, l watch.Lease, max int) (watch.Batch, error) {
	xact, id, err := parseCursor(l.Cursor)
	if err != nil {
		return watch.Batch{}, err
	}
	sub := l.Subscription
	// One statement per kind of scope, so that each is planned with the
	// index it needs: a generic plan of "$3 IS NULL OR page_id = $3"
	// would scan every page's updates past the cursor.
	scope, arg := "$3::bigint IS NULL", any(nil)
	switch {
	case sub.PageID != 0:
		scope, arg = "u.page_id = $3", sub.PageID
	case sub.Tag != "":
		scope, arg = "$3::text = ANY (p.tags)", sub.Tag
	}
	// Each update carries its article as the API shows it in lists (no
	// body): the stored one, or status pending while article_work holds
	// its URL. The statement reads both in one snapshot, and the
	// extractor writes the article and deletes the work in one
	// transaction, so an update is never seen with neither.
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.page_id, u.url, u.text, u.code, u.discovered_at, u.summary, u.burst, `+placeColumns+`, u.xact::text, p.base_url,
			`+displayNameSQL+`, `+articlePendingSQL+`,
			`+articleColumns(false)+`
		FROM updates u JOIN pages p ON p.id = u.page_id `+articleJoinSQL+`
		WHERE (u.xact, u.id) > ($1::xid8, $2::bigint) AND u.xact < `+horizon+` AND `+scope+`
		ORDER BY u.xact, u.id
		LIMIT $4`,
		xact, id, arg, max)
	if err != nil {
		return watch.Batch{}, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
	}
	defer rows.Close()
	b := watch.Batch{Pages: map[int64]watch.NotifiedPage{}}
	var lastXact string
	for rows.Next() {
		var (
			u       watch.Update
			page    watch.NotifiedPage
			uXact   string
			pending bool
			article articleScan
		)
		if err := rows.Scan(append([]any{&u.ID, &u.PageID, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt, &u.Summary, &u.Burst,
			&u.Position, &u.Heading, &u.Landmark, &uXact, &page.URL, &page.Name, &pending}, article.dest()...)...); err != nil {
			return watch.Batch{}, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
		}
		if u.Article, err = article.articleOf(pending, u.URL); err != nil {
			return watch.Batch{}, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
		}
		// Without a digest a message holds one check: the run of rows
		// that one transaction wrote for one page. The rest waits for the
		// next batch, which starts where this one ends.
		if sub.Digest == watch.DigestNone && len(b.Updates) > 0 && (uXact != lastXact || u.PageID != b.Updates[0].PageID) {
			break
		}
		page.ID, u.PageName = u.PageID, page.Name
		b.Pages[u.PageID] = page
		b.Updates = append(b.Updates, u)
		lastXact = uXact
	}
	if err := rows.Err(); err != nil {
		return watch.Batch{}, fmt.Errorf("pending updates of subscription %d: %w", sub.ID, err)
	}
	if len(b.Updates) == 0 {
		return watch.Batch{}, nil
	}
	// The id names the subscription and the cursor the batch starts from:
	// the same cursor always yields the same batch.
	b.ID = fmt.Sprintf("msg_%d_%s_%d", sub.ID, xact, id)
	b.Next = lastXact + ":" + strconv.FormatInt(b.Updates[len(b.Updates)-1].ID, 10)
	return b, nil
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
		b.ID, len(b.Updates), b.Updates[0].ID, b.Updates[len(b.Updates)-1].ID, a.ResponseCode, a.Error).Scan(&n)
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
// count up across retries of one message.
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
		b.ID, len(b.Updates), b.Updates[0].ID, b.Updates[len(b.Updates)-1].ID, a.ResponseCode, a.Error).Scan(&paused)
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
	created_at, paused_at, coalesce(paused_reason, ''), (extract(epoch FROM wait_article) * 1000)::bigint`

// subscriptionScan holds the columns that need converting after the scan.
type subscriptionScan struct {
	channel, digest string
	paused          *time.Time
	waitMS          int64
}

func subscriptionFields(sub *watch.Subscription) []any {
	return []any{&sub.ID, nil, &sub.Target, &sub.Secret, nil, &sub.PageID, &sub.Tag, &sub.CreatedAt, nil, &sub.PausedReason, nil}
}

// targets fills the conversion slots (the nils) of fields with its own.
func (sc *subscriptionScan) targets(fields []any) []any {
	fields[1], fields[4], fields[8], fields[10] = &sc.channel, &sc.digest, &sc.paused, &sc.waitMS
	return fields
}

func (sc *subscriptionScan) apply(sub *watch.Subscription) {
	sub.Channel, sub.Digest = watch.Channel(sc.channel), watch.Digest(sc.digest)
	sub.WaitArticle = time.Duration(sc.waitMS) * time.Millisecond
	if sc.paused != nil {
		sub.PausedAt = *sc.paused
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
