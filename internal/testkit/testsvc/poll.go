package testsvc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// PollInterval is how often Eventually asks its condition again: short
// enough that a test waits at most this long past the moment the condition
// holds, long enough not to load the shared services.
const PollInterval = 50 * time.Millisecond

// ErrNotYet is what Poll returns, wrapped with the wait's description,
// when timeout passes before the condition holds.
var ErrNotYet = errors.New("condition not met in time")

// Poll calls cond every interval until it reports done, returns an error
// (which Poll returns, wrapped), ctx ends, or timeout passes (ErrNotYet,
// wrapped with the last progress cond reported). cond's progress is a few
// words on how far the wait got ("12 of 20 pages"), for that message.
// Everything that waits for the programs or the services (tests and
// benchmarks alike) waits through Poll, so no wait is a bare sleep and every
// wait has a bound.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() (done bool, progress string, err error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		done, progress, err := cond()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			if progress != "" {
				return fmt.Errorf("%w after %s (%s)", ErrNotYet, timeout, progress)
			}
			return fmt.Errorf("%w after %s", ErrNotYet, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Eventually waits, every PollInterval, until cond returns true, and fails
// the test with "waiting for <what>: ..." when cond returns an error or
// timeout passes first. cond may call t.Fatal itself.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := Poll(context.Background(), timeout, PollInterval, func() (bool, string, error) {
		ok, err := cond()
		return ok, "", err
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// MessagesReady returns the messages ready for delivery in a queue. A queue
// that does not exist is an error (wrapping amqp's NOT_FOUND).
func MessagesReady(conn *amqp.Connection, queue string) (int, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("inspect queue %s: %w", queue, err)
	}
	// A passive declare of a missing queue closes the channel: one per call.
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("inspect queue %s: %w", queue, err)
	}
	return q.Messages, nil
}

// QueueDepth returns the messages ready in queue on the broker at AMQPURL,
// 0 for a queue never declared (nothing was ever published to it). It fails
// the test when the broker cannot be reached.
func QueueDepth(t testing.TB, queue string) int {
	t.Helper()
	return QueueDepthAt(t, AMQPURL(), queue)
}

// QueueDepthAt is QueueDepth on the broker at amqpURL.
func QueueDepthAt(t testing.TB, amqpURL, queue string) int {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatalf("queue depth of %s: %v", queue, err)
	}
	defer conn.Close()
	n, err := MessagesReady(conn, queue)
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// WaitDepth waits until queue on the broker at AMQPURL holds want ready
// messages, failing the test after timeout with the depth it last saw.
func WaitDepth(t testing.TB, timeout time.Duration, queue string, want int) {
	t.Helper()
	err := Poll(context.Background(), timeout, PollInterval, func() (bool, string, error) {
		got := QueueDepth(t, queue)
		return got == want, fmt.Sprintf("it holds %d", got), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to hold %d messages: %v", queue, want, err)
	}
}
