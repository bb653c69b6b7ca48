package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// The store translates PostgreSQL's errors at its boundary: data it refuses
// for good is watch.ErrPermanent, so a service decides without pgx; a page
// that is gone is watch.ErrPageNotFound and not permanent data trouble.
func TestRefusedDataIsPermanent(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://refused.example/", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL's text cannot hold a NUL byte (22021, a data exception).
	_, err = st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: time.Now(), Status: 500, Error: "bad\x00byte"}, nil)
	if !watch.IsPermanent(err) {
		t.Fatalf("RecordCheck with a NUL byte = %v, want an error wrapping watch.ErrPermanent", err)
	}
	_, err = st.RecordCheck(ctx, watch.Check{PageID: p.ID + 1000, FetchedAt: time.Now(), Status: 200}, nil)
	if !errors.Is(err, watch.ErrPageNotFound) || watch.IsPermanent(err) {
		t.Fatalf("RecordCheck of a missing page = %v, want watch.ErrPageNotFound only", err)
	}
}
