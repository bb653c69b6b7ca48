package queue_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves goroutines behind: every
// connection, reconnect loop, worker and ack timer must end with its owner.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
