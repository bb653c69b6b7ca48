package systest

import (
	"context"
	"net/url"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// SnapshotFetcher answers every fetch with Snap as fetch.Client would have
// answered it: status 200, the body decoded by fetch.DecodeHTML with the
// recorded Content-Type. Tests give it to crawler.New to run recorded
// homepages through the crawler's own extraction path without a server.
// Set Snap before each Check; it is not safe for concurrent use.
type SnapshotFetcher struct {
	Snap corpus.Snapshot
	// PageURL is the final URL reported, which relative links resolve
	// against; nil means the snapshot's own URL.
	PageURL *url.URL
}

// Fetch returns the current snapshot, whatever is asked.
func (f *SnapshotFetcher) Fetch(context.Context, watch.FetchRequest) (watch.FetchResult, error) {
	final := f.PageURL
	if final == nil {
		final = f.Snap.URL
	}
	html, charset := fetch.DecodeHTML(f.Snap.Body, f.Snap.ContentType)
	return watch.FetchResult{Status: 200, FinalURL: final, HTML: html, Charset: charset, FetchedAt: time.Now()}, nil
}
