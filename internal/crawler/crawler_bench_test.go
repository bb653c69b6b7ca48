package crawler_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// corpusServer serves every corpus page as it was published (no declared
// charset, so the crawler detects it) and returns the pages' URLs and total
// size. It skips the benchmark when the corpus is absent, unless CI=true.
func corpusServer(b *testing.B) (urls []string, size int64) {
	pages := map[string][]byte{}
	for _, p := range corpus.Pages(b) {
		pages["/"+p.Name+"/"] = p.Body
		size += int64(len(p.Body))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write(body)
	}))
	b.Cleanup(srv.Close)
	for name := range pages {
		urls = append(urls, srv.URL+name)
	}
	return urls, size
}

// discard is a Publisher that takes every message and keeps none.
type discard struct{ bytes int64 }

func (d *discard) Publish(_ context.Context, _ string, msgs ...watch.Message) error {
	for _, m := range msgs {
		d.bytes += int64(len(m.Body))
	}
	return nil
}

func benchService(b *testing.B, pub crawler.Publisher) *crawler.Service {
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, pub, log, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// BenchmarkCheck is the crawler's per-page work on the corpus, as in
// production but without the broker: fetch over loopback HTTP, charset
// detection and decoding, html.Parse, the breadth-first walk, URL
// normalisation. One op checks every corpus page once.
func BenchmarkCheck(b *testing.B) {
	urls, size := corpusServer(b)
	svc := benchService(b, &discard{})
	b.SetBytes(size)
	b.ReportAllocs()
	links, failed := 0, 0
	for b.Loop() {
		links, failed = 0, 0
		for i, u := range urls {
			task := svc.Check(context.Background(), watch.Job{ID: int64(i + 1), BaseURL: u})
			if task.Failed() {
				failed++ // a hostile corpus page cut off at a limit is still a check
			}
			links += len(task.Context)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(urls))/1000, "ms/page")
	b.ReportMetric(float64(links), "links/op")
	b.ReportMetric(float64(failed), "failed/op")
}

// BenchmarkHandle adds what Check leaves out: decoding the job and
// encoding the task as JSON. The publisher discards the task.
func BenchmarkHandle(b *testing.B) {
	urls, size := corpusServer(b)
	pub := &discard{}
	svc := benchService(b, pub)
	jobs := make([][]byte, len(urls))
	for i, u := range urls {
		jobs[i] = []byte(`{"baseUrl":"` + u + `","id":` + itoa(i+1) + `}`)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, j := range jobs {
			if err := svc.Handle(context.Background(), watch.Delivery{Body: j}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(urls))/1000, "ms/page")
	b.ReportMetric(float64(pub.bytes)/float64(b.N*len(urls)), "task-bytes/page")
}

func itoa(i int) string {
	var buf [20]byte
	n := len(buf)
	for {
		n--
		buf[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(buf[n:])
		}
	}
}
