package store

import (
	"math"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// sql returns the rule's minimum and share for the recording statement,
// where detection off is a minimum no check reaches.
func burstSQL(b watch.Burst) (int64, float64) {
	if b.Share <= 0 {
		return math.MaxInt64, 1
	}
	return int64(max(b.Min, 1)), b.Share
}
