package crawler

import (
	"errors"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
)

// deferredUntil reports whether the fetcher put the check off rather than
// let a politeness wait hold a worker, and until when.
func deferredUntil(err error) (time.Time, bool) {
	var fe *fetch.Error
	if errors.As(err, &fe) && fe.Kind == fetch.KindDeferred {
		return fe.RetryAt, true
	}
	return time.Time{}, false
}
