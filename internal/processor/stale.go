package processor

import (
	"context"
	"sync"
	"time"
)

// A seen-set code is a link's key with its headline (SeenCode), and a
// headline can change back: the old headline's code must leave the
// seen-set, or the link's return to it would read as seen and no revision
// be recorded. The code leaves before the check that replaced the headline
// commits (dropOldTexts), so a processor killed after the commit leaves no
// old code behind; but Redis can fail that removal, and the check commits
// all the same. staleCodes keeps such codes until a removal succeeds, and
// until then the page's links are all sent to PostgreSQL, which is always
// right: a page with a stale code never trusts the cache. Another
// processor does not know them; the ledger retries at most every
// staleRetry, so the codes are gone within that of Redis answering again,
// long before most pages are checked again. Only a processor that dies
// before Redis answers again can leave a stale code (a double fault), and
// then only a headline that returns to that old text within the set's
// generation goes unrecorded.
type staleCodes struct {
	mu     sync.Mutex
	byPage map[int64][]uint64
	count  int
	last   time.Time // the last attempt to remove them
}

const (
	// staleRetry spaces the ledger's attempts while Redis fails.
	staleRetry = time.Second
	// maxStale bounds the ledger; past it the oldest pages go, logged.
	maxStale = 100_000
)

// add notes codes of the page that a removal failed to drop, and reports
// how many codes of other pages it let go to stay within maxStale.
func (l *staleCodes) add(pageID int64, codes []uint64) (dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byPage == nil {
		l.byPage = map[int64][]uint64{}
	}
	l.byPage[pageID] = append(l.byPage[pageID], codes...)
	l.count += len(codes)
	for id, cs := range l.byPage {
		if l.count <= maxStale {
			break
		}
		if id == pageID {
			continue
		}
		delete(l.byPage, id)
		l.count -= len(cs)
		dropped += len(cs)
	}
	return dropped
}

// has reports whether the page has codes waiting to be removed.
func (l *staleCodes) has(pageID int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byPage[pageID]) > 0
}

// flush tries, at most every staleRetry, to remove every waiting code with
// remove, and forgets the pages it succeeds for.
func (l *staleCodes) flush(ctx context.Context, remove func(ctx context.Context, pageID int64, codes []uint64) error) {
	l.mu.Lock()
	if l.count == 0 || time.Since(l.last) < staleRetry {
		l.mu.Unlock()
		return
	}
	l.last = time.Now()
	waiting := make(map[int64][]uint64, len(l.byPage))
	for id, cs := range l.byPage {
		waiting[id] = cs
	}
	l.mu.Unlock()
	for id, cs := range waiting {
		if err := remove(ctx, id, cs); err != nil {
			return // Redis still fails: the next attempt tries them all
		}
		l.mu.Lock()
		// Codes noted meanwhile stay for the next attempt.
		if rest := l.byPage[id][len(cs):]; len(rest) > 0 {
			l.byPage[id] = rest
		} else {
			delete(l.byPage, id)
		}
		l.count -= len(cs)
		l.mu.Unlock()
	}
}
