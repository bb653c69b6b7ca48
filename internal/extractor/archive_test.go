package extractor_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/extractor"
)

// TestArticlePagesAreArchived reads a story with the archive on: the
// article's snapshot is indexed with it and reads back as the page the
// site sent.
func TestArticlePagesAreArchived(t *testing.T) {
	t.Parallel()
	files, err := archive.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := newFarm(t)
	body := story("Harbour budget agreed", 300)
	u := f.serve("/story", "text/html; charset=utf-8", body)
	r := newRig(t, rigOptions{cfg: extractor.Config{Concurrency: 2, Archive: archive.NewWriter(files, archive.WriterConfig{})}})
	r.show(u)
	r.run(30 * time.Second)
	o := r.outcome(u)
	if o.status != "ok" {
		t.Fatalf("story: %+v", o)
	}
	snaps, err := r.st.ArticleSnapshots(context.Background(), o.id)
	if err != nil || len(snaps) != 1 || snaps[0].ArticleID != o.id || snaps[0].Ref.Status != 200 {
		t.Fatalf("snapshots of article %d: %+v %v", o.id, snaps, err)
	}
	got, err := archive.ReadResponse(context.Background(), files, snaps[0], 1<<20)
	if err != nil || !bytes.Equal(got.Payload, body) {
		t.Fatalf("stored article page differs from the page sent (%v)", err)
	}
	// The API's reader finds it by id too.
	one, err := r.st.Snapshot(context.Background(), snaps[0].ID)
	if err != nil || one.ArticleID != o.id {
		t.Fatalf("Snapshot(%d) = %+v, %v", snaps[0].ID, one, err)
	}
}
