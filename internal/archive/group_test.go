package archive

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// gatedStore holds the first append of records (the one after the
// warcinfo), saying so on held, until open is closed, and counts appends.
type gatedStore struct {
	*FS
	held    chan struct{}
	open    chan struct{}
	mu      sync.Mutex
	appends int
}

func (s *gatedStore) Append(ctx context.Context, name string, p []byte) (int64, error) {
	s.mu.Lock()
	s.appends++
	n := s.appends
	s.mu.Unlock()
	if n == 2 {
		close(s.held)
		<-s.open
	}
	return s.FS.Append(ctx, name, p)
}

// TestChecksWaitingForAnAppendShareTheNext holds one append while other
// checks arrive: they are appended together in one more append, and each
// one's reference reads back its own body.
func TestChecksWaitingForAnAppendShareTheNext(t *testing.T) {
	ctx := context.Background()
	fs, err := NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &gatedStore{FS: fs, held: make(chan struct{}), open: make(chan struct{})}
	w := NewWriter(store, WriterConfig{})
	const checks = 6
	refs := make([]watch.SnapshotRef, checks)
	var wg sync.WaitGroup
	write := func(i int) {
		wg.Go(func() {
			body := fmt.Appendf(nil, "<html>check %d</html>", i)
			cp := watch.Capture{URL: "http://portal.test/", Method: "GET", RequestURI: "/", Host: "portal.test",
				Proto: "HTTP/1.1", Status: "200 OK", Header: http.Header{"Content-Type": {"text/html"}}, Body: body,
				At: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
			ref, err := w.Write(ctx, Check{PageID: int64(i), CheckID: watch.NewCheckID(), Capture: cp})
			if err != nil {
				t.Error(err)
			}
			refs[i] = ref
		})
	}
	write(0)
	<-store.held
	for i := 1; i < checks; i++ {
		write(i)
	}
	// Until the others wait behind the held one.
	for {
		w.mu.Lock()
		waiting := len(w.queue)
		w.mu.Unlock()
		if waiting == checks-1 {
			break
		}
		runtime.Gosched()
	}
	close(store.open)
	wg.Wait()
	if store.appends != 3 {
		t.Errorf("%d appends for a warcinfo and %d checks, one of them held while the others waited; want 3", store.appends, checks)
	}
	for i, ref := range refs {
		res, err := ReadResponse(ctx, fs, watch.Snapshot{Ref: ref}, 1<<10)
		if err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		if want := fmt.Sprintf("<html>check %d</html>", i); string(res.Payload) != want {
			t.Errorf("check %d reads back %q, want %q", i, res.Payload, want)
		}
	}
}
