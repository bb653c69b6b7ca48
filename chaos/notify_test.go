//go:build chaos

package chaos

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// The notifier's fault proof: notifiers SIGKILLed at random and PostgreSQL
// restarted while checks keep committing (some late, behind larger ids),
// against a receiver that fails 30 % of requests with 500 and lets 10 % time
// out. Some checks also write an event, and some subscriptions ask for some
// kinds. At the end each subscription's receiver must hold exactly the
// updates of its scope and the events of its kinds there, each first
// received in the order of its check, every request signed, every repeat
// under a webhook-id seen before. TestNotifierSlowReceivers runs notifiers against receivers that
// hang, drip a 200 and answer at the timeout's edge: every request must be
// an attempt in the delivery log. Run them alone, one at a time:
// go test -tags chaos -count=1 -run TestNotifierUnderFaults -v ./chaos

// flakyReceiver is a webhook receiver per subscription path (/hook/N).
type flakyReceiver struct {
	t       *testing.T
	rng     *rand.Rand
	timeout time.Duration
	// fail and hang are the shares of requests answered 500 and left to
	// time out; a control sets both to 0.
	fail, hang float64

	mu       sync.Mutex
	secrets  map[string]string
	requests int
	badSigs  int
	accepted map[string]map[string]bool  // path -> webhook-ids answered 2xx
	got      map[string]map[int64]string // path -> update or event id -> first webhook-id
	order    map[string][]int64          // path -> ids in the order first received
	dupes    int
	strayDup []string // repeats under a webhook-id never accepted before
}

func newFlakyReceiver(t *testing.T, timeout time.Duration, fail, hang float64) *flakyReceiver {
	return &flakyReceiver{t: t, rng: rand.New(rand.NewPCG(rand.Uint64(), 1)), timeout: timeout, fail: fail, hang: hang,
		secrets: map[string]string{}, accepted: map[string]map[string]bool{}, got: map[string]map[int64]string{},
		order: map[string][]int64{}}
}

func (rc *flakyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests++
	secret := rc.secrets[r.URL.Path]
	roll := rc.rng.Float64()
	rc.mu.Unlock()
	if !verifySignature(secret, r.Header, body) {
		rc.mu.Lock()
		rc.badSigs++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case roll < rc.fail:
		w.WriteHeader(http.StatusInternalServerError)
		return
	case roll < rc.fail+rc.hang:
		// Answer only after the notifier gave up.
		select {
		case <-r.Context().Done():
		case <-time.After(3 * rc.timeout):
		}
		return
	}
	if rc.accept(r, body) {
		w.WriteHeader(http.StatusNoContent)
	}
}

// accept notes the updates of a verified request as received, and reports
// whether its body was a message.
func (rc *flakyReceiver) accept(r *http.Request, body []byte) bool {
	var msg webhook.Body
	if err := json.Unmarshal(body, &msg); err != nil {
		rc.t.Errorf("undecodable body: %v", err)
		return false
	}
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	path := r.URL.Path
	if rc.got[path] == nil {
		rc.got[path], rc.accepted[path] = map[int64]string{}, map[string]bool{}
	}
	ids := make([]int64, 0, len(msg.Updates)+1)
	for _, u := range msg.Updates {
		ids = append(ids, u.ID)
	}
	if msg.Event != nil {
		ids = append(ids, msg.Event.ID)
	}
	for _, n := range ids {
		if _, seen := rc.got[path][n]; seen {
			rc.dupes++
			if !rc.accepted[path][id] {
				rc.strayDup = append(rc.strayDup, fmt.Sprintf("%s update or event %d under new id %s", path, n, id))
			}
			continue
		}
		rc.got[path][n] = id
		rc.order[path] = append(rc.order[path], n)
	}
	rc.accepted[path][id] = true
	return true
}

func (rc *flakyReceiver) ids(path string) []int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ids []int64
	for id := range rc.got[path] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// verifySignature checks a request as README tells receivers to.
func verifySignature(secret string, h http.Header, body []byte) bool {
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	want, err := webhook.Sign(secret, h.Get("webhook-id"), ts, body)
	if err != nil {
		return false
	}
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// notifyScope is one subscription of the test: its receiver path, the
// SQL condition on updates u joined with pages p that its scope means, and
// the kinds of event it asks for (an SQL array, "{}" for none).
type notifyScope struct {
	path, args, where, kinds string
}

var secretRE = regexp.MustCompile(`whsec_\S+`)

// subscribe adds each scope's webhook with the real CLI and tells the
// receiver its secret.
func subscribe(t *testing.T, sys *systest.System, rc *flakyReceiver, url string, scopes []notifyScope) {
	t.Helper()
	for _, s := range scopes {
		args := append([]string{"notify", "add", "webhook", url + s.path}, strings.Fields(s.args)...)
		out, err := sys.Watchctl(args...)
		if err != nil {
			t.Fatalf("watchctl %v: %v\n%s", args, err, out)
		}
		rc.mu.Lock()
		rc.secrets[s.path] = secretRE.FindString(out)
		rc.mu.Unlock()
	}
}

// writeChecks commits checks like the processor's, from several writers at
// once, each holding its transaction open a random while so that commits
// come out of id order, until ctx ends. Failures (PostgreSQL restarting)
// are retried; the truth is what committed.
func writeChecks(ctx context.Context, db *pgxpool.Pool, pages []int64, writers int, every time.Duration) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; ctx.Err() == nil; n++ {
				func() {
					tx, err := db.Begin(ctx)
					if err != nil {
						return
					}
					defer tx.Rollback(context.WithoutCancel(ctx))
					prefix := fmt.Sprintf("http://portal.example/w%d/c%d/", w, n)
					page := pages[rng.IntN(len(pages))]
					if _, err := tx.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key)
						SELECT $1, $2 || g, 'story ' || g, 'c', hashtext($2 || g) FROM generate_series(1, $3) g`,
						page, prefix, 1+rng.IntN(4)); err != nil {
						return
					}
					// Every other check also writes an event, after its
					// updates, as the check statement does.
					if kind := rng.IntN(6); kind < 3 {
						if _, err := tx.Exec(ctx, `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text, reason)
							SELECT $1, k, now(), CASE WHEN k = 'link.rewritten' THEN 1 END, CASE WHEN k = 'link.rewritten' THEN $2 END,
								CASE WHEN k = 'link.rewritten' THEN 'old' END, CASE WHEN k = 'link.rewritten' THEN 'new' END,
								CASE WHEN k = 'page.degraded' THEN 'blocked' END
							FROM (SELECT ($3::text[])[$4] AS k) e`,
							page, prefix, []string{"link.rewritten", "page.degraded", "page.recovered"}, kind+1); err != nil {
							return
						}
					}
					time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond) // a slow check: a late commit
					tx.Commit(ctx)                                              //nolint:errcheck // the truth is what committed
				}()
				select {
				case <-ctx.Done():
				case <-time.After(every):
				}
			}
		})
	}
	wg.Wait()
}

func notifyPages(t *testing.T, db *pgxpool.Pool) []int64 {
	t.Helper()
	var pages []int64
	for i, tags := range []string{"{ministries}", "{ministries,press}", "{}", "{press}"} {
		var id int64
		if err := db.QueryRow(context.Background(), `INSERT INTO pages (base_url, tags, enabled) VALUES ($1, $2, false) RETURNING id`,
			fmt.Sprintf("http://portal%d.example/", i), tags).Scan(&id); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, id)
	}
	return pages
}

func scopesFor(pages []int64) []notifyScope {
	return []notifyScope{
		{"/hook/all-1", "--events link.rewritten,page.degraded,page.recovered", "true", "{link.rewritten,page.degraded,page.recovered}"},
		{"/hook/all-2", "", "true", "{}"},
		{"/hook/page", fmt.Sprintf("--page %d --events page.degraded", pages[2]), fmt.Sprintf("u.page_id = %d", pages[2]), "{page.degraded}"},
		{"/hook/tag", "--tag ministries --events page.recovered,link.rewritten", "'ministries' = ANY (p.tags)", "{link.rewritten,page.recovered}"},
	}
}

// truth returns the ids of the updates in a scope and of its events of
// the kinds it asked for, in the order of their checks' commits.
func truth(t *testing.T, db *pgxpool.Pool, s notifyScope) []int64 {
	t.Helper()
	var ids []int64
	rows, err := db.Query(context.Background(), `
		SELECT u.id FROM (
			SELECT id, xact, page_id FROM updates
			UNION ALL
			SELECT id, xact, page_id FROM events WHERE kind = ANY ($1::text[])
		) u JOIN pages p ON p.id = u.page_id WHERE `+s.where+` ORDER BY u.xact, u.id`, s.kinds)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestNotifierUnderFaults(t *testing.T) {
	const webhookTimeout = 300 * time.Millisecond
	w := newWorld(t, servers{sharedQueues: true},
		"PORTALWATCH_WEBHOOK_TIMEOUT="+webhookTimeout.String(), "PORTALWATCH_SMTP_TIMEOUT=500ms",
		"PORTALWATCH_NOTIFIER_LEASE=2s", "PORTALWATCH_NOTIFIER_POLL=50ms",
		"PORTALWATCH_NOTIFY_RETRY_MIN=50ms", "PORTALWATCH_NOTIFY_RETRY_MAX=1s")
	rc := newFlakyReceiver(t, webhookTimeout, 0.30, 0.10)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	pages := notifyPages(t, w.sys.DB)
	scopes := scopesFor(pages)
	subscribe(t, w.sys, rc, srv.URL, scopes)
	w.startFleet(map[string]string{"notifier-1": "notifier", "notifier-2": "notifier", "notifier-3": "notifier"}, nil)

	writing, stopWriting := context.WithTimeout(context.Background(), 40*time.Second)
	defer stopWriting()
	var bg sync.WaitGroup
	bg.Go(func() { writeChecks(writing, w.sys.DB, pages, 3, 400*time.Millisecond) })
	bg.Go(func() {
		restarts := map[time.Duration]bool{12 * time.Second: true, 27 * time.Second: true}
		start := time.Now()
		for writing.Err() == nil {
			select {
			case <-writing.Done():
				return
			case <-time.After(time.Duration(500+rand.IntN(1000)) * time.Millisecond):
			}
			for at := range restarts {
				if time.Since(start) > at {
					delete(restarts, at)
					w.pg.Restart()
					w.log.add("pg restart", "fast shutdown and start")
				}
			}
			if what := w.fleet.killRandom(); what != "" {
				w.log.add("kill -9 notifier", "%s", what)
			}
		}
	})
	bg.Wait()

	// Every scope's receiver must come to hold exactly its updates and
	// events, each first received in the order of its check.
	testsvc.Eventually(t, 90*time.Second, "every update and event delivered", func() (bool, error) {
		for _, s := range scopes {
			want := truth(t, w.sys.DB, s)
			if !slices.Equal(rc.ids(s.path), slices.Sorted(slices.Values(want))) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, s := range scopes {
		rc.mu.Lock()
		got := slices.Clone(rc.order[s.path])
		rc.mu.Unlock()
		if want := truth(t, w.sys.DB, s); !slices.Equal(got, want) {
			t.Errorf("%s first received %v, want the order of the checks %v", s.path, got, want)
		}
	}
	w.fleet.shutdown()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	w.t.Logf("faults: %v", w.log.counts)
	total := 0
	for _, s := range scopes {
		n := len(rc.got[s.path])
		total += n
		t.Logf("%s: %d updates and events in %d messages", s.path, n, len(rc.accepted[s.path]))
		if n == 0 {
			t.Errorf("%s received nothing: the test proves nothing", s.path)
		}
	}
	t.Logf("%d requests, %d updates delivered, %d repeats", rc.requests, total, rc.dupes)
	if rc.badSigs != 0 {
		t.Errorf("%d requests failed signature verification", rc.badSigs)
	}
	if len(rc.strayDup) != 0 {
		t.Errorf("%d repeats came under a webhook-id never accepted before, e.g. %v", len(rc.strayDup), rc.strayDup[:min(3, len(rc.strayDup))])
	}
}

// TestNotifierNegativeControlCursorFirst moves the cursor before delivering
// and crashes in between for some batches, as a notifier that records
// first would: the same receiver and checker then find lost updates.
func TestNotifierNegativeControlCursorFirst(t *testing.T) {
	// A private server: on the shared one, other tests' open transactions
	// hold the horizon back for seconds.
	w := newWorld(t, servers{sharedQueues: true})
	rc := newFlakyReceiver(t, time.Second, 0, 0)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	pages := notifyPages(t, w.sys.DB)
	scope := scopesFor(pages)[0]
	subscribe(t, w.sys, rc, srv.URL, []notifyScope{scope})

	ctx := context.Background()
	st, err := store.Open(ctx, w.sys.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	writing, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	go writeChecks(writing, w.sys.DB, pages, 2, 100*time.Millisecond)
	hooks := webhook.New(webhook.Config{})
	crashes := 0
	// One claim a round, at the notifier's poll, until nothing is pending
	// after the last check.
	err = testsvc.Poll(ctx, 30*time.Second, 20*time.Millisecond, func() (bool, string, error) {
		leases, err := st.ClaimSubscriptions(ctx, 1, time.Minute)
		if err != nil || len(leases) == 0 {
			var settled bool
			if err == nil {
				err = w.sys.DB.QueryRow(ctx, `SELECT coalesce(max(xact) < pg_snapshot_xmin(pg_current_snapshot()), true) FROM updates`).Scan(&settled)
			}
			return writing.Err() != nil && settled, "", err
		}
		l := leases[0]
		b, err := st.PendingBatch(ctx, l, 500)
		if err != nil {
			return false, "", err
		}
		// The wrong order: the cursor moves first...
		if err := st.CompleteDelivery(ctx, l, b, watch.Attempt{}); err != nil {
			return false, "", err
		}
		// ...and a crash before the delivery loses the batch.
		if rand.IntN(5) == 0 {
			crashes++
			return false, "", nil
		}
		res := hooks.Send(ctx, l.Subscription, b.Type(), b)
		return false, fmt.Sprintf("%d crashes", crashes), res.Err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, want := rc.ids(scope.path), truth(t, w.sys.DB, scope)
	t.Logf("cursor-first control: %d crashes, %d of %d updates delivered", crashes, len(got), len(want))
	if crashes == 0 || len(got) >= len(want) {
		t.Fatalf("the control lost nothing (%d crashes, %d of %d delivered): the checker has no teeth", crashes, len(got), len(want))
	}
}

// slowReceiver puts the three slow receivers of issue 26 in front of a
// flakyReceiver's bookkeeping: /hook/hang keeps its first request past the
// notifier's timeout, /hook/drip accepts every message with a 200 whose
// body drips for twice the timeout, /hook/edge accepts its first message
// just before the timeout. Everything else is accepted at once.
type slowReceiver struct {
	*flakyReceiver
	quit chan struct{} // closed when the test ends, before the server closes

	mu    sync.Mutex
	sends map[string]map[string]int // path -> webhook-id -> requests
}

func (rc *slowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path, id := r.URL.Path, r.Header.Get("webhook-id")
	rc.flakyReceiver.mu.Lock()
	rc.requests++
	secret := rc.secrets[path]
	rc.flakyReceiver.mu.Unlock()
	if !verifySignature(secret, r.Header, body) {
		rc.flakyReceiver.mu.Lock()
		rc.badSigs++
		rc.flakyReceiver.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	if rc.sends[path] == nil {
		rc.sends[path] = map[string]int{}
	}
	rc.sends[path][id]++
	first := len(rc.sends[path]) == 1 && rc.sends[path][id] == 1
	rc.mu.Unlock()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
		case <-rc.quit:
		}
		return false
	}
	switch {
	case path == "/hook/hang" && first:
		wait(3 * rc.timeout) // the notifier gives up long before
	case path == "/hook/drip":
		if !rc.accept(r, body) {
			return
		}
		w.WriteHeader(http.StatusOK)
		for start := time.Now(); time.Since(start) < 2*rc.timeout; {
			if _, err := w.Write([]byte(".")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if !wait(200 * time.Millisecond) {
				return
			}
		}
	case path == "/hook/edge" && first:
		// So close to the timeout that the answer may land on either
		// side: either must be recorded as what it was.
		if wait(rc.timeout-10*time.Millisecond) && rc.accept(r, body) {
			w.WriteHeader(http.StatusOK)
		}
	default:
		if rc.accept(r, body) {
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// TestNotifierSlowReceivers runs two notifier programs, with the default
// webhook timeout and the shortest lease they accept, against the three
// slow receivers while checks commit: every update must reach each
// receiver, every cursor move past the last, and every request be an
// attempt in the delivery log, so that a message goes out again only after
// a failure the log shows. Before issue 26 the record deadline ran out
// with a send that took the timeout: the hang went unlogged and the
// dripped 200 was sent again at every lease. It needs the real 10s
// timeout; the run takes about as long.
func TestNotifierSlowReceivers(t *testing.T) {
	const timeout = 10 * time.Second
	w := newWorld(t, servers{sharedQueues: true},
		"PORTALWATCH_WEBHOOK_TIMEOUT="+timeout.String(), "PORTALWATCH_SMTP_TIMEOUT="+timeout.String(),
		"PORTALWATCH_NOTIFIER_LEASE="+(2*timeout).String(), "PORTALWATCH_NOTIFIER_POLL=50ms",
		"PORTALWATCH_NOTIFY_RETRY_MIN=200ms", "PORTALWATCH_NOTIFY_RETRY_MAX=1s")
	rc := &slowReceiver{flakyReceiver: newFlakyReceiver(t, timeout, 0, 0), quit: make(chan struct{}), sends: map[string]map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	defer close(rc.quit) // before Close, which waits for the handlers
	pages := notifyPages(t, w.sys.DB)
	all := scopesFor(pages)[0]
	scopes := []notifyScope{{"/hook/hang", all.args, all.where, all.kinds}, {"/hook/drip", all.args, all.where, all.kinds}, {"/hook/edge", all.args, all.where, all.kinds}}
	subscribe(t, w.sys, rc.flakyReceiver, srv.URL, scopes)
	w.startFleet(map[string]string{"notifier-1": "notifier", "notifier-2": "notifier"}, nil)

	// Checks keep committing while the first sends hang.
	writing, stopWriting := context.WithTimeout(context.Background(), 5*time.Second)
	defer stopWriting()
	writeChecks(writing, w.sys.DB, pages, 2, 500*time.Millisecond)

	ctx := context.Background()
	// A timeout, a backoff and the rest: well under the old code's repeats
	// at every lease.
	err := testsvc.Poll(ctx, 2*timeout+15*time.Second, 100*time.Millisecond, func() (bool, string, error) {
		var stuck int
		err := w.sys.DB.QueryRow(ctx, `SELECT count(*) FROM subscriptions s
			WHERE EXISTS (SELECT 1 FROM updates u WHERE (u.xact, u.id) > (s.cursor_xact, s.cursor_id))`).Scan(&stuck)
		if err != nil {
			return false, "", err
		}
		for _, s := range scopes {
			// truth is in the order of the checks, ids are sorted.
			if !slices.Equal(rc.ids(s.path), slices.Sorted(slices.Values(truth(t, w.sys.DB, s)))) {
				return false, fmt.Sprintf("%s lacks updates; %d cursors before the last update", s.path, stuck), nil
			}
		}
		return stuck == 0, fmt.Sprintf("%d cursors before the last update", stuck), nil
	})
	if err != nil {
		t.Errorf("waiting for every update delivered and recorded: %v", err)
	}
	w.fleet.shutdown()
	w.sys.StopAll()

	rc.flakyReceiver.mu.Lock()
	defer rc.flakyReceiver.mu.Unlock()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSigs != 0 {
		t.Errorf("%d requests failed signature verification", rc.badSigs)
	}
	if len(rc.strayDup) != 0 {
		t.Errorf("%d repeats came under a webhook-id never accepted before, e.g. %v", len(rc.strayDup), rc.strayDup[:min(3, len(rc.strayDup))])
	}
	// Failures each receiver explains: the hang one, the edge none or one,
	// the drip none.
	explained := map[string][2]int{"/hook/hang": {1, 1}, "/hook/drip": {0, 0}, "/hook/edge": {0, 1}}
	for _, s := range scopes {
		var sub int64
		if err := w.sys.DB.QueryRow(ctx, `SELECT id FROM subscriptions WHERE target = $1`, srv.URL+s.path).Scan(&sub); err != nil {
			t.Fatal(err)
		}
		rows, err := w.sys.DB.Query(ctx, `SELECT message_id, status, attempts, last_error FROM deliveries WHERE subscription_id = $1`, sub)
		if err != nil {
			t.Fatal(err)
		}
		type entry struct {
			status, lastError string
			attempts          int
		}
		logged := map[string]entry{}
		for rows.Next() {
			var id string
			var e entry
			if err := rows.Scan(&id, &e.status, &e.attempts, &e.lastError); err != nil {
				t.Fatal(err)
			}
			logged[id] = e
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		failures := 0
		for id, n := range rc.sends[s.path] {
			e, ok := logged[id]
			switch {
			case !ok:
				t.Errorf("%s: message %s was sent %d times and is not in the delivery log", s.path, id, n)
			case e.status != string(watch.Delivered) || e.attempts != n:
				t.Errorf("%s: message %s was sent %d times; the delivery log says %s after %d attempts (%q)", s.path, id, n, e.status, e.attempts, e.lastError)
			}
			failures += n - 1
		}
		for id := range logged {
			if rc.sends[s.path][id] == 0 {
				t.Errorf("%s: the delivery log has message %s, which never came", s.path, id)
			}
		}
		if want := explained[s.path]; failures < want[0] || failures > want[1] {
			t.Errorf("%s: %d repeats, want %d to %d: one per failure the receiver caused", s.path, failures, want[0], want[1])
		}
		t.Logf("%s: %d updates in %d messages, %d requests, %d repeats", s.path, len(rc.got[s.path]), len(rc.sends[s.path]), len(rc.sends[s.path])+failures, failures)
	}
}
