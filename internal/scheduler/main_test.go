package scheduler_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: the
// scheduler's Run must end every goroutine it starts once its context ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
