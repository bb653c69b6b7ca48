package processor_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: once
// the seen-set and the store are closed, nothing Handle started may run on.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
