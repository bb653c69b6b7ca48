package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A check follows the links that leave its page inside its own statement
// (recordLinksStatement), so removals cost no extra round trip, statement or
// commit, and it never writes links for it. A check with neither candidate
// links nor a link set (304, "unchanged") only counts, and records an
// absence it makes due with a second statement (recordDueRemovals).
//
// The page's followed link set is kept per bucket of the key space
// (shortlink.KeyBucket): a followed_keys row's keys and the page's links
// inserted after the check that wrote the row (links.first_check after
// followed_keys.through), less the keys that left the page since the row
// was written (pages.gone_keys). pages.link_buckets holds the digests of the
// followed set's buckets (shortlink.BucketDigests, XORs).
//
// The digests tell most checks' changes without comparing: a bucket whose
// digest XOR the keys of the links new to the page is the check's digest
// only gained those links, and one where that leaves a single link's key
// lost that link or got it back. Such a check, told by knownChange from the
// page's state its job carried (watch.Followed), is sent with a statement
// that compares nothing and verifies that state (knowing). Any other check
// with the whole link set (watch.Removals.Keys) compares key by key only the
// buckets it did not merely add new links to: those whose stored digest XOR
// the keys of the links the statement inserted is not the check's digest,
// and those with gone keys (trackingCTEs). It rewrites only their rows. The
// keys the set has and the check lacks left the page.
//
// The page's row holds the pending absences (pages.pending_keys and
// pending_since, by key), which every check rewrites anyway: a link that
// left is pending from the check that first lacked it (its count in
// pages.ok_checks), a pending link that is back is dropped, and the check
// at which an absence has lasted K checks records the link in removals,
// once. A removed link that comes back is simply in the set again, and it
// was never new: links still has it. A page not followed yet (pending_keys
// NULL) or being re-baselined starts from the check's set without
// reporting anything.
//
// trackingSQL is the part of the check statement that follows removals:
// columns of the page CTE, the check count the links insert stamps on new
// links, CTEs that follow the insert, what the status update reads besides
// the page, its SET entries, and the final SELECT's columns (the removals
// recorded, and whether an absence is due that the statement left to
// recordDueRemovals) with what they are read from.
type trackingSQL struct{ columns, firstCheck, ctes, from, set, result, resultFrom string }

// following is how a check statement follows removals.
type following int

const (
	// notFollowing: removals are off. A check that does not follow leaves
	// the page not followed, and the statement carries nothing else for it.
	notFollowing following = iota
	// comparing: the statement compares the check's link set with the
	// followed set where they may differ (trackingCTEs). It takes $22, the
	// removal count K, $23, the bucket digests of the check's keys or NULL
	// without the whole set, $24, those keys sorted by bucket, and $25,
	// where each bucket starts in $24.
	comparing
	// knowing: the caller knows what the check changes in the followed
	// set (knownChange), so the statement only verifies the page's state
	// it started from and writes the new one, as trackingKnown says.
	knowing
)

// tracking returns the check statement's part for following f, for a
// check with the page's whole link set or without (whole), and, knowing,
// what the check changes (ch) with the number of its first parameter.
func tracking(f following, whole bool, ch change, param int) trackingSQL {
	switch f {
	case comparing:
		// A stale check's new links were on the page before its last
		// check: they join the followed set only once a check has them.
		return trackingSQL{columns: trackingColumns, firstCheck: `CASE WHEN page.tracks THEN page.check_no END`,
			ctes: trackingCTEs(), from: `, pending`, set: trackingSet(whole),
			result:     `removed.ids, removed.urls, removed.texts, removed.at, false`,
			resultFrom: ` CROSS JOIN removed`}
	case knowing:
		return trackingKnown(ch, param)
	}
	return trackingSQL{
		firstCheck: `NULL::int`,
		set:        `pending_keys = NULL, pending_since = NULL, link_buckets = NULL, gone_keys = NULL`,
		result:     `NULL::bigint[], NULL::text[], NULL::text[], NULL::timestamptz[], false`,
	}
}

// trackingKnown is the statement's part for a check whose change to the
// followed set is known (knownChange), with its parameters numbered from
// p: the page's state as the job carried it (p: ok_checks, p+1: digests,
// p+2: pending keys, p+3: gone keys) and the state after the check (p+4:
// digests, p+5 and p+6: pending keys and since, p+7: gone keys), then, if
// the check has any, the absences due (p+8, recorded). The statement inserts every candidate
// link ($16 of them) as a link after its bucket's row, so it joins the
// followed set. It verifies on the page's locked row that the state is the
// job's, and on the insert's result that every candidate was new (the
// insert sees every committed link, so this holds even when another check
// of the page committed after the statement began). Otherwise
// followed_set_changed (00010) fails the statement, which so changes
// nothing, and recordLinks sends the comparing one. The statement carries
// neither the check's keys nor the parts that compare: PostgreSQL sets up
// every part of a statement at each execution, and those cost a check about
// half as much again even with few rows to read or write (BENCHMARKS.md).
func trackingKnown(ch change, p int) trackingSQL {
	n := func(i int) string { return fmt.Sprintf("$%d", p+i) }
	t := trackingSQL{
		columns: `,
				` + newer + ` AND NOT ` + startsAfresh + ` AND ok_checks = ` + n(0) + `::bigint AND link_buckets = ` + n(1) + `::bigint[]
				AND pending_keys = coalesce(` + n(2) + `::bigint[], '{}') AND coalesce(gone_keys, '{}') = coalesce(` + n(3) + `::bigint[], '{}') AS as_expected,
				ok_checks + 1 AS check_no`,
		firstCheck: `page.check_no`,
		set: `pending_keys  = CASE WHEN page.as_expected AND (SELECT count(*) FROM fresh) = $16 THEN ` + n(5) + `::bigint[]
				                     ELSE followed_set_changed() END,
				pending_since = ` + n(6) + `::bigint[], link_buckets = ` + n(4) + `::bigint[], gone_keys = ` + n(7) + `::bigint[]`,
		result: `NULL::bigint[], NULL::text[], NULL::text[], NULL::timestamptz[], false`,
	}
	if len(ch.due) > 0 {
		t.ctes = recordingRemovals(n(8) + `::bigint[]`)
		t.result, t.resultFrom = `removed.ids, removed.urls, removed.texts, removed.at, false`, ` CROSS JOIN removed`
	}
	return t
}

// knownArgs are trackingKnown's parameters for ch, from the job's state f.
func knownArgs(f *watch.Followed, ch change) []any {
	args := []any{f.Checks, f.Buckets, f.Pending, f.Gone, ch.digests, ch.pending, ch.since, ch.gone}
	if len(ch.due) > 0 {
		args = append(args, ch.due)
	}
	return args
}

// change is what a check changes in its page's followed set and absences
// (knownChange): the pending absences and gone keys after the check (sorted
// by key), the absences that are due at it, and the digests of the check's
// buckets.
type change struct {
	pending, since, gone, due, digests []int64
}

// maxGone bounds pages.gone_keys: a check that would go past it compares,
// which rewrites every bucket with a gone key and so empties it.
const maxGone = 64

// knownChange tells what the check changes in its page's followed set from
// the page's state when its job was scheduled (r.Followed), the check's
// link set as trackedKeys gives it, and links, the links not known to be
// recorded: for each bucket, the job's digests XOR those of the keys of
// links XOR the check's are those of the keys that left or came back. Zero
// is none; a key of the bucket with its Mix (shortlink.BucketDigests) is
// one link, which left if the check lacks it, and is back if the check has
// it and the followed set listed it as gone. Anything else, and a state the
// job did not carry, is not known (false), and the check compares. The
// statement verifies what the caller cannot know: that the page's state is
// still the job's, and that every one of links is new.
func knownChange(r watch.Removals, set trackedSet, links []watch.NewLink) (change, bool) {
	f := r.Followed
	if r.Checks <= 0 || f == nil || set.digests == nil || len(f.Buckets) != shortlink.DigestWords ||
		len(f.Pending) != len(f.PendingSince) {
		return change{}, false
	}
	diff := slices.Clone(f.Buckets)
	for _, l := range links {
		b := shortlink.KeyBucket(l.Key)
		diff[b] ^= int64(l.Key) // the bits, not the number, are the key
		diff[shortlink.KeyBuckets+b] ^= int64(shortlink.Mix(l.Key))
	}
	var left, back []int64
	for b := range shortlink.KeyBuckets {
		d, mixed := diff[b]^set.digests[b], diff[shortlink.KeyBuckets+b]^set.digests[shortlink.KeyBuckets+b]
		switch {
		case d == 0 && mixed == 0:
			continue
		case shortlink.KeyBucket(uint64(d)) != b || mixed != int64(shortlink.Mix(uint64(d))):
			return change{}, false // several keys
		case slices.Contains(set.keys[set.starts[b]-1:set.starts[b+1]-1], d):
			if !slices.Contains(f.Gone, d) {
				return change{}, false // back, but its bucket's row does not list it
			}
			back = append(back, d)
		case slices.Contains(f.Gone, d) || slices.Contains(f.Pending, d):
			return change{}, false // not in the followed set: several keys
		default:
			left = append(left, d)
		}
	}
	ch := change{digests: set.digests}
	for _, k := range f.Gone {
		if !slices.Contains(back, k) {
			ch.gone = append(ch.gone, k)
		}
	}
	ch.gone = append(ch.gone, left...)
	if len(ch.gone) > maxGone {
		return change{}, false
	}
	slices.Sort(ch.gone)
	// Absences age by the page's check count: this check's is one more.
	check := f.Checks + 1
	type absence struct{ key, since int64 }
	var held []absence
	for i, k := range f.Pending {
		if !slices.Contains(back, k) {
			held = append(held, absence{k, f.PendingSince[i]})
		}
	}
	for _, k := range left {
		held = append(held, absence{k, check})
	}
	slices.SortFunc(held, func(a, b absence) int { return cmp.Compare(a.key, b.key) })
	ch.pending, ch.since = []int64{}, []int64{} // empty, not NULL: the page stays followed
	for _, a := range held {
		if a.since <= check-int64(r.Checks)+1 {
			ch.due = append(ch.due, a.key)
			continue
		}
		ch.pending, ch.since = append(ch.pending, a.key), append(ch.since, a.since)
	}
	return ch, true
}

// errFollowedSetChanged is the SQLSTATE of followed_set_changed.
const errFollowedSetChanged = "PW001"

// trackingColumns are the page CTE's columns for following. A stale or
// repeated check (not after the page's last) does not count and compares
// nothing. Nor does a check that waited for the page's lock while another
// check of the page committed (two deliveries at once): the locked row is
// the newest, but the statement reads followed_keys as they were when it
// began, before the other check rewrote them; the next check compares
// instead. The snapshot's ok_checks tells: every check that writes
// followed_keys counts. Their names differ from the pages columns that the
// status update reads unqualified.
const trackingColumns = `,
				ok_checks + CASE WHEN ` + newer + ` THEN 1 ELSE 0 END AS check_no,
				` + newer + ` AS tracks,
				` + startsAfresh + ` AS reset,
				` + newer + ` AND $23::bigint[] IS NOT NULL AND ` + sameSnapshot + `
					AND (` + startsAfresh + ` OR link_buckets IS DISTINCT FROM $23::bigint[]) AS compare,
				pending_keys AS pend_keys, pending_since AS pend_since, link_buckets AS old_buckets,
				coalesce(gone_keys, '{}') AS gone,
				ARRAY(SELECT DISTINCT ((g >> 59) & 31)::int FROM unnest(gone_keys) AS g) AS gone_buckets`

// sameSnapshot is true in the page CTE when no check of the page committed
// between the start of the statement and its lock of the page's row.
const sameSnapshot = `ok_checks = (SELECT seen.ok_checks FROM pages seen WHERE seen.id = $1)`

// newer is true when the check being recorded is after the page's last
// recorded one (fresh, without a repeat of the same check).
const newer = `(last_checked_at IS NULL OR last_checked_at < $2)`

// startsAfresh is true when the page's following starts from this check's
// set: it is not followed yet, has no baseline, or is being re-baselined.
const startsAfresh = `(pending_keys IS NULL OR baseline_at IS NULL OR (rebaseline AND $8))`

// checkBucket is the check's keys in the bucket of the SQL expression b.
func checkBucket(b string) string {
	return `($24::bigint[])[($25::int[])[` + b + ` + 1] : ($25::int[])[` + b + ` + 2] - 1]`
}

// trackingCTEs follow the links insert (fresh). added is the digest of the
// links it inserted, per bucket. scope is the buckets the check compares key
// by key: those whose stored digest XOR added is not the check's, those
// with a gone key (so the check empties gone_keys), or all of them when the
// page starts being followed. A bucket out of scope has
// exactly the stored set's keys and the links just inserted, which are now
// in its followed set as links after its row. held is the page's absences
// after this check: the pending ones the check does not have (any key the
// check has and the followed set lacks is in a bucket of scope, so no test
// of the bucket is needed), and the followed set's keys in compared buckets
// that the check lacks (from this check on): the row's keys and the links
// inserted after it, found by the page and the bucket's key range in links'
// primary key, less the gone keys. Each key is compared with its bucket's slice of the check's
// keys, a few, not the whole set. kept rewrites the compared buckets' rows;
// it changes nothing held reads, since every part of one statement sees the
// tables as they were before it. recordingDue records the absences that
// are due.
func trackingCTEs() string {
	return `
		), added AS (
			SELECT ((link_key >> 59) & 31)::int AS b, bit_xor(link_key) AS digest, bit_xor(` + shortlink.MixSQL(`link_key`) + `) AS mixed
			FROM fresh GROUP BY 1
		), scope AS (
			SELECT g.b FROM page, generate_series(0, 31) AS g(b)
			WHERE page.compare AND (page.reset OR cardinality(page.old_buckets) IS DISTINCT FROM ` + digestWords + ` OR g.b = ANY (page.gone_buckets)
			                        OR ` + changedOtherwise(`g.b`) + `)
		), held AS (
			SELECT p.k, p.since FROM page, unnest(page.pend_keys, page.pend_since) AS p(k, since)
			WHERE NOT page.reset AND (NOT page.compare OR p.k <> ALL (` + checkBucket(`((p.k >> 59) & 31)::int`) + `))
			UNION ALL
			SELECT f.k, page.check_no FROM page, followed_keys s, LATERAL (
				SELECT unnest(s.keys)
				UNION
				SELECT l.link_key FROM links l
				WHERE l.page_id = $1 AND l.link_key BETWEEN (s.bucket::bigint << 59) AND (s.bucket::bigint << 59) + ` + bucketWidth + `
				  AND l.first_check > s.through) AS f(k)
			WHERE NOT page.reset AND s.page_id = $1 AND s.bucket = ANY (ARRAY(SELECT b FROM scope)::smallint[])
			  AND f.k <> ALL (` + checkBucket(`s.bucket`) + `) AND f.k <> ALL (page.gone)
		), kept AS (
			INSERT INTO followed_keys (page_id, bucket, keys, through)
			SELECT $1, b, ` + checkBucket(`b`) + `, page.check_no FROM page, scope
			ON CONFLICT (page_id, bucket) DO UPDATE SET keys = excluded.keys, through = excluded.through` + recordingDue(`$22::int`)
}

// changedOtherwise is true when bucket b (an SQL expression) of the check's
// keys is not the page's stored bucket with the links the statement
// inserted added: it lost a link or got one back.
func changedOtherwise(b string) string {
	return `(page.old_buckets[` + b + ` + 1] # coalesce((SELECT digest FROM added WHERE added.b = ` + b + `), 0))
				   IS DISTINCT FROM ($23::bigint[])[` + b + ` + 1]`
}

// digestWords is shortlink.DigestWords in SQL.
var digestWords = fmt.Sprint(shortlink.DigestWords)

// bucketWidth is the span of keys in one bucket less one: bucket b's keys,
// as PostgreSQL's signed bigints, run from b << 59 to that plus bucketWidth.
const bucketWidth = `576460752303423487`

// recordingDue is the CTEs that record the absences that are due, after a
// page CTE with the page's check count (check_no) and a held CTE of its
// absences (k, since), with k the SQL of the removal count K. pending
// splits held into the absences still pending, as the page's arrays, and
// those due, which recordingRemovals records.
func recordingDue(k string) string {
	return `
		), pending AS (
			SELECT coalesce(array_agg(h.k ORDER BY h.k) FILTER (WHERE NOT h.due), '{}') AS keys,
			       coalesce(array_agg(h.since ORDER BY h.k) FILTER (WHERE NOT h.due), '{}') AS since,
			       coalesce(array_agg(h.k) FILTER (WHERE h.due), '{}') AS due
			FROM (SELECT held.k, held.since, held.since <= page.check_no - ` + k + ` + 1 AS due FROM page, held) h
` + recordingRemovals(`(SELECT due FROM pending)::bigint[]`)
}

// recordingRemovals is the CTEs that record the removals of the page's
// links whose keys the SQL array due lists, after a page CTE: removal
// records them, reading their links by key, and removed is what it
// recorded, as arrays (ids, urls, texts, at).
func recordingRemovals(due string) string {
	return `
		), removal AS (
			INSERT INTO removals (page_id, link_key, url, text)
			SELECT $1, links.link_key, links.url, links.text FROM page, links
			WHERE links.page_id = $1 AND links.link_key = ANY (` + due + `)
			RETURNING id, url, text, removed_at
		), removed AS (
			SELECT array_agg(id ORDER BY id) AS ids, array_agg(url ORDER BY id) AS urls,
			       array_agg(text ORDER BY id) AS texts, array_agg(removed_at ORDER BY id) AS at
			FROM removal`
}

// trackingSet is the status update's SET entries for the pending absences
// and the bucket digests, for a check with the whole link set or without
// (whole): a stale or repeated check records only the absences already
// due, a check that compared stores its digests, and a re-baseline without
// the whole set leaves the start to the next check that has it. The
// digests stay those of the followed set when a check counts but compares
// nothing. Without the whole set, the check XORs in the links it inserted,
// which joined the set as links after their rows, so a later check that
// lacks one of them differs from the digests, and compares. With it,
// another check of the page committed after the statement began: the
// digests are cleared, and the next check compares every bucket.
func trackingSet(whole bool) string {
	counted := `WHEN page.tracks AND NOT page.reset AND page.old_buckets IS DISTINCT FROM $23::bigint[] THEN NULL`
	if !whole {
		counted = `WHEN page.tracks AND NOT page.reset AND cardinality(page.old_buckets) = ` + digestWords + ` THEN ARRAY(
				                         SELECT page.old_buckets[g.w + 1] # coalesce((
				                             SELECT CASE WHEN g.w < 32 THEN digest ELSE mixed END FROM added WHERE added.b = g.w % 32), 0)
				                         FROM generate_series(0, ` + digestWords + ` - 1) AS g(w) ORDER BY g.w)`
	}
	return `
				pending_keys  = CASE WHEN page.reset AND NOT page.compare THEN CASE WHEN page.tracks THEN NULL ELSE pending_keys END
				                     ELSE pending.keys END,
				pending_since = CASE WHEN page.reset AND NOT page.compare THEN CASE WHEN page.tracks THEN NULL ELSE pending_since END
				                     ELSE pending.since END,
				link_buckets  = CASE WHEN page.compare THEN $23::bigint[]
				                     ` + counted + `
				                     WHEN NOT page.tracks OR NOT page.reset THEN link_buckets END,
				gone_keys     = CASE WHEN page.compare OR (page.reset AND page.tracks) THEN NULL ELSE gone_keys END`
}

// trackedSet is a check's whole link set as the statements take it: keys
// sorted by bucket ($24), the digests of its buckets ($23), and where each
// bucket starts in keys ($25). All are nil when the check lacks the set;
// keys is empty when the page has no link.
type trackedSet struct {
	keys, digests []int64
	starts        []int32
}

// trackedKeys is r's link set as the statements take it.
func trackedKeys(r watch.Removals) trackedSet {
	if r.Keys == nil {
		return trackedSet{}
	}
	sorted := slices.Clone(r.Keys)
	digests := shortlink.BucketDigests(sorted) // sorts
	sorted = slices.Compact(sorted)
	keys := make([]int64, len(sorted))
	for i, k := range sorted {
		keys[i] = int64(k) // the bits, not the number, are the key
	}
	return trackedSet{keys: keys, digests: digests, starts: shortlink.BucketStarts(sorted)}
}

// recordDueRemovals records the page's pending absences that have lasted k
// checks, after a check that compared no link set (recordSuccess found them
// due), and drops them from the pending ones. It runs in a transaction of
// its own after that check's: should it not run, the absences stay pending
// and past due, and the page's next check records them.
func recordDueRemovals(ctx context.Context, q querier, pageID int64, k int) ([]watch.Removal, error) {
	var removed removedColumns
	err := q.QueryRow(ctx, `
		WITH page AS (
			SELECT id, ok_checks AS check_no, pending_keys, pending_since FROM pages
			WHERE id = $1 AND pending_keys IS NOT NULL FOR UPDATE
		), held AS (
			SELECT p.k, p.since FROM page, unnest(page.pending_keys, page.pending_since) AS p(k, since)`+recordingDue(`$2::int`)+`
		), status AS (
			UPDATE pages SET pending_keys = pending.keys, pending_since = pending.since
			FROM page, pending WHERE pages.id = page.id
		)
		SELECT ids, urls, texts, at FROM removed`, pageID, k).Scan(&removed.ids, &removed.urls, &removed.texts, &removed.at)
	if err != nil {
		return nil, fmt.Errorf("record removals due: %w", err)
	}
	return removed.removals(pageID), nil
}

// removedColumns are the check statement's columns of the removals it
// recorded, NULL when there were none.
type removedColumns struct {
	ids   []int64
	urls  []string
	texts []string
	at    []time.Time
}

func (r removedColumns) removals(pageID int64) []watch.Removal {
	var out []watch.Removal
	for i, id := range r.ids {
		out = append(out, watch.Removal{ID: id, PageID: pageID, URL: r.urls[i], Text: r.texts[i], RemovedAt: r.at[i]})
	}
	return out
}

// PruneRemovals deletes up to limit removals recorded more than olderThan
// ago, oldest first, and returns how many it deleted.
func (s *Store) PruneRemovals(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM removals WHERE id IN (
			SELECT id FROM removals WHERE removed_at < now() - $1 * interval '1 millisecond'
			ORDER BY removed_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete removals older than %s: %w", olderThan, err)
	}
	return tag.RowsAffected(), nil
}

// Removals returns the removals q selects (its PageID, Since and Limit),
// newest first.
func (s *Store) Removals(ctx context.Context, q UpdatesQuery) ([]watch.Removal, error) {
	pageID, since, limit := q.args()
	rows, err := s.pool.Query(ctx, `
		SELECT id, page_id, url, text, removed_at FROM removals
		WHERE ($1::bigint IS NULL OR page_id = $1) AND ($2::timestamptz IS NULL OR removed_at >= $2)
		ORDER BY removed_at DESC, id DESC
		LIMIT $3`, pageID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	removals, err := pgx.CollectRows(rows, scanRemoval)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	return removals, nil
}

func scanRemoval(r pgx.CollectableRow) (watch.Removal, error) {
	var m watch.Removal
	err := r.Scan(&m.ID, &m.PageID, &m.URL, &m.Text, &m.RemovedAt)
	return m, err
}

// QueryRemovals returns the removals of one page (pageID 0: every page),
// removed at or after since (zero: any time), at most limit (0: 100),
// newest first.
func (s *Store) QueryRemovals(ctx context.Context, pageID int64, since time.Time, limit int) ([]watch.Removal, error) {
	return s.Removals(ctx, UpdatesQuery{PageID: pageID, Since: since, Limit: limit})
}
