package fetch

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves goroutines behind: every server,
// connection and robots.txt fetch must be cleaned up.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
