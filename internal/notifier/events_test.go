package notifier_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// TestServiceDeliversEachKindOfEvent: a webhook that asked for every kind
// of event is sent each as a signed message of its own, its type the
// kind, with the page and the fields of its kind; one that asked for none
// is sent nothing.
func TestServiceDeliversEachKindOfEvent(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	secret := watch.NewWebhookSecret()
	var (
		mu  sync.Mutex
		got = map[string][]webhook.Body{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, time.Now()); err != nil {
			t.Errorf("a request did not verify: %v", err)
		}
		var b webhook.Body
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], b)
		mu.Unlock()
	}))
	defer srv.Close()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://ministry.example/", Name: "Ministry"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		path  string
		kinds []watch.EventKind
	}{{"/every", watch.EventKinds}, {"/none", nil}} {
		if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + s.path, Secret: secret,
			Events: s.kinds}); err != nil {
			t.Fatal(err)
		}
	}
	stop := startService(t, st, notifier.Config{PollInterval: 20 * time.Millisecond})
	defer stop()
	for _, k := range watch.EventKinds {
		if _, err := pool.Exec(ctx, insertEvent, page.ID, k); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.Eventually(t, 3*time.Minute, "each event received", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(got["/every"]) >= len(watch.EventKinds), nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got["/none"]) != 0 {
		t.Errorf("the subscription without events was sent %d messages", len(got["/none"]))
	}
	for i, b := range got["/every"] {
		e := b.Event
		if e == nil || b.Type != string(watch.EventKinds[i]) || e.Kind != watch.EventKinds[i] || e.PageID != page.ID || e.At.IsZero() ||
			b.Page.ID != page.ID || b.Page.Name != "Ministry" || len(b.Updates) != 0 {
			t.Errorf("message %d: %+v event %+v, want a %s event of page %d", i, b, e, watch.EventKinds[i], page.ID)
			continue
		}
		switch e.Kind {
		case watch.LinkRewritten:
			if e.URL != "http://x.example/story" || e.OldText != "Fees up" || e.NewText != "Fees cut" {
				t.Errorf("link.rewritten %+v", e)
			}
		case watch.PageDegraded:
			if e.Reason != watch.Blocked || e.Detail != "the page answered 403 Forbidden" {
				t.Errorf("page.degraded %+v", e)
			}
		}
	}
}
