package crawler_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// The page: a <base href> whose path is 1,900 "&", then 5,000
// relative anchors whose text is "&lt;" repeated. Every link resolves to
// ~1.9 KB; with HTML escaping and no budget the task was 63 MiB.
func TestTaskStaysWithinItsBudget(t *testing.T) {
	var page strings.Builder
	page.WriteString(`<base href="/` + strings.Repeat("&amp;", 1900) + `/">`)
	for i := range 5000 {
		fmt.Fprintf(&page, `<a href="p%d">%s</a>`, i, strings.Repeat("&lt;", 400))
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page.String()))
	})
	pub := &recorder{}
	svc := newService(t, pub)
	job, _ := watch.EncodeJob(watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if err := svc.Handle(context.Background(), watch.Delivery{Body: job}); err != nil {
		t.Fatal(err)
	}
	body := pub.msgs[0].Body
	if len(body) > crawler.DefaultMaxTaskBytes {
		t.Fatalf("task of %d bytes, over the budget of %d", len(body), crawler.DefaultMaxTaskBytes)
	}
	task, err := watch.DecodeTask(body)
	if err != nil {
		t.Fatal(err)
	}
	if task.Failed() || len(task.Context) == 0 || task.Truncated == 0 || len(task.Context)+task.Truncated != 5000 {
		t.Fatalf("%d links kept, %d truncated (error %q); want some kept, the rest of the 5,000 counted", len(task.Context), task.Truncated, task.Error)
	}
	if len(body) < crawler.DefaultMaxTaskBytes*9/10 {
		t.Errorf("task of %d bytes: the budget of %d is not used, links were cut early", len(body), crawler.DefaultMaxTaskBytes)
	}
}

// Links past MaxLinks are counted in Task.Truncated too.
func TestLinksPastTheCapAreCounted(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := range 30 {
			fmt.Fprintf(w, `<a href="/%d">%d</a>`, i, i)
		}
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks", Limits: domwalk.Limits{MaxLinks: 10}}, f, &recorder{},
		testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if len(task.Context) != 10 || task.Truncated != 20 {
		t.Fatalf("%d links, %d truncated; want 10 and 20", len(task.Context), task.Truncated)
	}
}

// A 10 KB gzip response inflating to 10 MiB of "<p>" cost ~400 MiB of heap
// in one parse. Now the check allocates the body and a bounded reading of it.
func TestInflatingPageCostsBoundedMemory(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`<a href="/first">First</a>`))
	zw.Write(bytes.Repeat([]byte("<p>"), (10<<20-100)/3))
	zw.Write([]byte(`<a href="/last">Last</a>`))
	zw.Close()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	})
	svc := newService(t, &recorder{})
	var task watch.Task
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	task = svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	runtime.ReadMemStats(&after)
	// The body: 10 MiB read into a buffer grown from the size guess, whose
	// copies add up to several times that (more under the race detector).
	// html.Parse alone took 400 MiB.
	const limit = 96 << 20
	heap := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB", heap>>10)
	if heap > limit {
		t.Errorf("one check allocated %d MiB, want at most %d MiB", heap>>20, limit>>20)
	}
	if task.Failed() || len(task.Context) != 2 {
		t.Fatalf("task %+v; want the two links", task)
	}
}
