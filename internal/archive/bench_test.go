package archive_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// nullStore is a Store that keeps nothing, only the sizes: the benchmark
// measures the writer's CPU, not the disk's.
type nullStore struct {
	mu    sync.Mutex
	sizes map[string]int64
}

func (s *nullStore) Append(_ context.Context, name string, p []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.sizes[name]
	s.sizes[name] = off + int64(len(p))
	return off, nil
}

func (s *nullStore) Seal(context.Context, string) error { return nil }

func (s *nullStore) Open(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, archive.ErrNotFound
}

func (s *nullStore) List(context.Context) ([]archive.FileInfo, error) { return nil, nil }

func (s *nullStore) Remove(context.Context, string) error { return nil }

// BenchmarkWriteCheck writes the records of one check a corpus page (real
// homepages, uncompressed, each body unique as in pwbench -vary-bodies):
// the crawler's CPU a check for building the records, their digests and
// their compression.
func BenchmarkWriteCheck(b *testing.B) {
	pages := corpus.Pages(b)
	var size int64
	for _, p := range pages {
		size += int64(len(p.Body))
	}
	w := archive.NewWriter(&nullStore{sizes: map[string]int64{}}, archive.WriterConfig{})
	ctx := context.Background()
	b.SetBytes(size / int64(len(pages)))
	b.ResetTimer()
	start := cpuTime(b)
	for i := 0; i < b.N; i++ {
		p := pages[i%len(pages)]
		cp := watch.Capture{URL: "http://portal.test/", Method: "GET", RequestURI: "/", Host: "portal.test",
			RequestHeader: http.Header{"User-Agent": {"portalwatch"}}, Proto: "HTTP/1.1", Status: "200 OK",
			Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: p.Body, At: time.Now()}
		if _, err := w.Write(ctx, archive.Check{PageID: 1, CheckID: watch.NewCheckID(), Capture: cp}); err != nil {
			b.Fatal(err)
		}
	}
	// The process's CPU, which a shared machine's other load changes less
	// than the wall time.
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
