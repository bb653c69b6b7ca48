package archive_test

import (
	"context"
	"sync"
	"testing"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestWriterConcurrentChecks writes and reads checks from many goroutines,
// as a crawler's workers and the web's readers do (run with -race: gowarc
// sets package state of github.com/google/uuid when it makes options).
func TestWriterConcurrentChecks(t *testing.T) {
	ctx := context.Background()
	fs, err := archive.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := archive.NewWriter(fs, archive.WriterConfig{FileBytes: 4 << 20})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		refs []watch.SnapshotRef
	)
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				ref, err := w.Write(ctx, archive.Check{PageID: int64(i), CheckID: watch.NewCheckID(), Capture: capture([]byte{byte(i)}, "")})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := archive.ReadResponse(ctx, fs, watch.Snapshot{Ref: ref}, 1<<10); err != nil {
					t.Error(err)
				}
				mu.Lock()
				refs = append(refs, ref)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	seen := map[[2]int64]bool{}
	for _, r := range refs {
		if seen[[2]int64{r.Offset, r.Length}] {
			t.Fatalf("two checks written at %d", r.Offset)
		}
		seen[[2]int64{r.Offset, r.Length}] = true
	}
}
