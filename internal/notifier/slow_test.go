package notifier_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// outcome is one attempt's outcome as the store took it.
type outcome struct {
	delivered bool
	code      int
	err       string
	at        time.Time // when the store had it
	retryAt   time.Time // a failure's next try
}

func (o outcome) String() string {
	if o.delivered {
		return fmt.Sprintf("delivered (%d)", o.code)
	}
	return fmt.Sprintf("failed (%q, retry in %s)", o.err, o.retryAt.Sub(o.at).Round(time.Millisecond))
}

// recordingOutbox is the real store, noting every outcome it accepted and
// every one it accepted after the lease it was recorded under may have run
// out (counted from before the claim, so on the safe side).
type recordingOutbox struct {
	*store.Store
	lease time.Duration

	mu       sync.Mutex
	claimed  map[int64]time.Time  // subscription -> when its last claim started
	outcomes map[string][]outcome // message id -> outcomes in order
	late     []string
}

func (r *recordingOutbox) ClaimSubscriptions(ctx context.Context, n int, lease time.Duration) ([]watch.Lease, error) {
	start := time.Now()
	leases, err := r.Store.ClaimSubscriptions(ctx, n, lease)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range leases {
		r.claimed[l.Subscription.ID] = start
	}
	return leases, err
}

func (r *recordingOutbox) note(l watch.Lease, b watch.Batch, o outcome) {
	o.at = time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[b.ID] = append(r.outcomes[b.ID], o)
	if end := r.claimed[l.Subscription.ID].Add(r.lease); o.at.After(end) {
		r.late = append(r.late, fmt.Sprintf("%s recorded %s after its lease ended", b.ID, o.at.Sub(end)))
	}
}

func (r *recordingOutbox) CompleteDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) error {
	err := r.Store.CompleteDelivery(ctx, l, b, a)
	if err == nil {
		r.note(l, b, outcome{delivered: true, code: a.ResponseCode})
	}
	return err
}

func (r *recordingOutbox) FailDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) (bool, error) {
	paused, err := r.Store.FailDelivery(ctx, l, b, a)
	if err == nil {
		r.note(l, b, outcome{code: a.ResponseCode, err: a.Error, retryAt: a.RetryAt})
	}
	return paused, err
}

// slowReceivers serves the three slow receivers of issue 26: /hang keeps
// the first request of each message past the sender's timeout, /drip
// answers 200 at once and drips its body for twice the timeout, /edge
// answers the first request of each message just before the timeout. Every
// later request is answered at once. It notes when each webhook-id came.
type slowReceivers struct {
	timeout time.Duration
	quit    chan struct{} // closed when the test ends, before the server closes

	mu    sync.Mutex
	sends map[string][]time.Time // path + " " + webhook-id -> arrivals
}

// edgeMargin is how long before the sender's timeout /edge answers: so
// close that the answer may land on either side of it, which the test
// allows, demanding only that each side be recorded as what it was.
const edgeMargin = 10 * time.Millisecond

func (rc *slowReceivers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck // the body is not what is tested here
	key := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.mu.Lock()
	rc.sends[key] = append(rc.sends[key], time.Now())
	first := len(rc.sends[key]) == 1
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
	case r.URL.Path == "/hang" && first:
		wait(3 * rc.timeout) // the sender gives up long before
	case r.URL.Path == "/drip":
		w.WriteHeader(http.StatusOK)
		flusher := w.(http.Flusher)
		for start := time.Now(); time.Since(start) < 2*rc.timeout; {
			if _, err := w.Write([]byte(".")); err != nil {
				return
			}
			flusher.Flush()
			if !wait(200 * time.Millisecond) {
				return
			}
		}
	case r.URL.Path == "/edge" && first:
		if wait(rc.timeout - edgeMargin) {
			w.WriteHeader(http.StatusOK)
		}
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (rc *slowReceivers) arrivals(path, id string) []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]time.Time(nil), rc.sends[path+" "+id]...)
}

// TestServiceRecordsSlowDeliveries runs the notifier with the programs'
// default webhook timeout and the shortest lease they accept (twice it)
// against receivers that take the whole timeout: each delivery's outcome
// must be recorded, within its lease; the cursor must move; and a
// webhook-id must go out once per recorded attempt, a retry only after a
// recorded failure and its backoff. A record deadline that starts before
// the send runs out with a send that takes the timeout (issue 26, item 3),
// so these need the real 10s timeout and take about as long.
func TestServiceRecordsSlowDeliveries(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	const timeout = webhook.DefaultTimeout
	lease := 2 * timeout // the least cmd/notifier accepts
	rc := &slowReceivers{timeout: timeout, quit: make(chan struct{}), sends: map[string][]time.Time{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	defer close(rc.quit) // before Close, which waits for the handlers

	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://a.example/"})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/hang", "/drip", "/edge"}
	subs := map[string]watch.Subscription{}
	for _, path := range paths {
		sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + path, Secret: watch.NewWebhookSecret()})
		if err != nil {
			t.Fatal(err)
		}
		subs[path] = sub
	}
	var last int64
	if err := pool.QueryRow(ctx, `INSERT INTO updates (page_id, url, text, code, link_key)
		SELECT $1, 'http://a.example/' || g, 't', 'c', g FROM generate_series(1, 2) g RETURNING id`, p.ID).Scan(&last); err != nil {
		t.Fatal(err)
	}
	// Start once the check is under the snapshot horizon (see
	// openStore), so that the waits below time the deliveries alone.
	testsvc.Eventually(t, 3*time.Minute, "the updates under the snapshot horizon", func() (bool, error) {
		var visible bool
		err := pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot()) > max(xact) FROM updates`).Scan(&visible)
		return visible, err
	})

	box := &recordingOutbox{Store: st, lease: lease, claimed: map[int64]time.Time{}, outcomes: map[string][]outcome{}}
	cfg := notifier.Config{Concurrency: 4, PollInterval: 20 * time.Millisecond, Lease: lease,
		RetryMin: 500 * time.Millisecond, RetryMax: time.Second}
	svc := notifier.New(cfg, box, map[watch.Channel]notifier.Sender{watch.Webhook: webhook.New(webhook.Config{Timeout: timeout})},
		testsvc.Logger(t), prometheus.NewRegistry())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()

	// moved reports whether a subscription's cursor is past the check.
	moved := func(sub watch.Subscription) (bool, error) {
		var past bool
		err := pool.QueryRow(ctx, `SELECT (s.cursor_xact, s.cursor_id) >= (u.xact, u.id) FROM subscriptions s, updates u
			WHERE s.id = $1 AND u.id = $2`, sub.ID, last).Scan(&past)
		return past, err
	}
	// Long enough for the old code's repeats to show: two leases and a
	// send. The fixed code needs one timeout and a backoff.
	err = testsvc.Poll(ctx, 2*lease+timeout, 100*time.Millisecond, func() (bool, string, error) {
		var stuck []string
		for _, path := range paths {
			past, err := moved(subs[path])
			if err != nil {
				return false, "", err
			}
			if !past {
				stuck = append(stuck, path)
			}
		}
		return len(stuck) == 0, "cursor still before the check for " + strings.Join(stuck, ", "), nil
	})
	if err != nil && !errors.Is(err, testsvc.ErrNotYet) {
		t.Fatal(err)
	}
	if err != nil {
		t.Errorf("waiting for every cursor to move: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}

	box.mu.Lock()
	defer box.mu.Unlock()
	for _, late := range box.late {
		t.Errorf("an outcome outlived its lease: %s", late)
	}
	for _, path := range paths {
		sub := subs[path]
		log, err := st.Deliveries(ctx, sub.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		// One check, one message: its id comes from the receiver if the
		// log lost it.
		var id string
		switch {
		case len(log) == 1:
			id = log[0].MessageID
		case len(log) == 0:
			rc.mu.Lock()
			for key := range rc.sends {
				if p, mid, _ := strings.Cut(key, " "); p == path {
					id = mid
				}
			}
			rc.mu.Unlock()
		default:
			t.Errorf("%s: %d messages in the delivery log, want 1: %+v", path, len(log), log)
			continue
		}
		sends, outs := rc.arrivals(path, id), box.outcomes[id]
		t.Logf("%s: message %s sent %d times; recorded %v; delivery log %+v", path, id, len(sends), outs, log)
		if len(sends) != len(outs) {
			t.Errorf("%s: message sent %d times, but %d outcomes recorded: every attempt must be", path, len(sends), len(outs))
		}
		failures := 0
		for i, o := range outs {
			if o.delivered {
				if i != len(outs)-1 {
					t.Errorf("%s: attempt %d delivered, yet attempts followed", path, i+1)
				}
				continue
			}
			failures++
			if want := fmt.Sprintf("no response in %s", timeout); !strings.Contains(o.err, want) {
				t.Errorf("%s: attempt %d failed with %q, want %q", path, i+1, o.err, want)
			}
			// A retry waits for its backoff: the next send comes after it.
			if o.retryAt.Sub(o.at) < cfg.RetryMin/2-50*time.Millisecond {
				t.Errorf("%s: attempt %d failed at %s and was retried from %s: no backoff", path, i+1, o.at, o.retryAt)
			}
			if i+1 < len(sends) && sends[i+1].Before(o.retryAt.Add(-10*time.Millisecond)) {
				t.Errorf("%s: attempt %d was sent at %s, before its backoff ended at %s", path, i+2, sends[i+1], o.retryAt)
			}
		}
		wantFailures := map[string][]int{"/hang": {1}, "/drip": {0}, "/edge": {0, 1}}[path]
		if failures != wantFailures[0] && failures != wantFailures[len(wantFailures)-1] {
			t.Errorf("%s: %d failed attempts recorded, want %v", path, failures, wantFailures)
		}
		if len(outs) == 0 || !outs[len(outs)-1].delivered {
			t.Errorf("%s: the message is not recorded as delivered", path)
		}
		if len(log) != 1 || log[0].Status != watch.Delivered || log[0].Attempts != len(sends) {
			t.Errorf("%s: delivery log %+v, want the message delivered after %d attempts (as sent)", path, log, len(sends))
		}
		if past, err := moved(sub); err != nil || !past {
			t.Errorf("%s: the cursor did not move past the check (%v)", path, err)
		}
	}
}
