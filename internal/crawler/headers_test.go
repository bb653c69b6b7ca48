package crawler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func keyOf(t *testing.T, b64 string) *secrets.Key {
	t.Helper()
	k, err := secrets.ParseKey(b64)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Two keys: 32 bytes of "k" and of "o".
const (
	crawlKey = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="
	otherKey = "b29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb28="
)

func newKeyedService(t *testing.T, pub crawler.Publisher, key watch.Sealer) *crawler.Service {
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks", Secrets: key}, f, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// A crawler opens the sealed cookie of a job just before the fetch; one
// without the key, or with another, fails the check with an error that
// says what to do, fetches nothing, and never shows the value.
func TestSealedCookieIsOpenedOrTheCheckFails(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Cookie") != "session=s3cr3t" || r.Header.Get("Accept-Language") != "de" {
			http.Error(w, "sign in", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/members/1">Members only</a>`))
	})
	key := keyOf(t, crawlKey)
	sealed, err := key.Seal(9, "Cookie", "session=s3cr3t")
	if err != nil {
		t.Fatal(err)
	}
	job := watch.Job{ID: 9, BaseURL: srv.URL + "/", Headers: []watch.Header{{Name: "Accept-Language", Value: "de"}, {Name: "Cookie", Sealed: sealed}}}

	task := newKeyedService(t, &recorder{}, key).Check(context.Background(), job)
	if task.Failed() || len(task.Context) != 1 {
		t.Fatalf("with the key: %+v, want the member link", task)
	}

	for name, key := range map[string]watch.Sealer{"no key": nil, "other key": keyOf(t, otherKey)} {
		before := hits.Load()
		pub := &recorder{}
		body, _ := json.Marshal(job)
		if err := newKeyedService(t, pub, key).Handle(context.Background(), watch.Delivery{Body: body}); err != nil || len(pub.msgs) != 1 {
			t.Fatalf("%s: Handle = %v, %d tasks; want the job acked with one failed task", name, err, len(pub.msgs))
		}
		if hits.Load() != before {
			t.Errorf("%s: the page was fetched without its cookie", name)
		}
		task, err := watch.DecodeTask(pub.msgs[0].Body)
		if err != nil {
			t.Fatal(err)
		}
		if !task.Failed() || !strings.Contains(task.Error, "PORTALWATCH_SECRETS_KEY") || strings.Contains(string(pub.msgs[0].Body), "s3cr3t") {
			t.Errorf("%s: task error %q, want one naming PORTALWATCH_SECRETS_KEY", name, task.Error)
		}
	}

	// The sealed value of page 9 opens for page 9 only.
	moved := job
	moved.ID = 10
	task = newKeyedService(t, &recorder{}, key).Check(context.Background(), moved)
	if !task.Failed() || !strings.Contains(task.Error, "set the header again") {
		t.Fatalf("a cookie moved to another page: %+v", task)
	}
}
