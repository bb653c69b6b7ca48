// Package queue is portalwatch's RabbitMQ adapter: work queues with
// dead-letter queues, a publisher that waits for the broker's confirms, and a
// consumer with manual acks, prefetch and a worker pool. It owns reconnection:
// each connection is redialled with capped, jittered backoff and the topology
// redeclared; deliveries in flight on a lost channel are dropped unacked (the
// broker requeues them) and are never acked on another channel.
//
// amqp091-go's own Config.Recovery is deliberately left off: it restarts
// delivery and confirm tags at 1, so an ack meant for a delivery of the old
// channel could acknowledge a different message of the new one.
package queue

import (
	"errors"
	"fmt"
	"net"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/backoff"
)

// Config holds what both publishers and consumers need.
type Config struct {
	// URL is the broker's AMQP URL.
	URL string
	// Name identifies the process in the broker's connection list.
	Name string
	// DeliveryLimit is how many times a message may be returned to a work
	// queue before RabbitMQ dead-letters it. It is a queue argument, fixed
	// when the queue is first declared. Default 20.
	DeliveryLimit int
	// Heartbeat is the AMQP heartbeat interval; a dead broker is noticed after
	// about two of them. Default 10s.
	Heartbeat time.Duration
	// ConfirmTimeout bounds the wait for the broker's confirm of a publish
	// before the connection is considered broken. Default 30s.
	ConfirmTimeout time.Duration
	// Backoff spaces reconnection attempts. Default 100ms up to 10s.
	Backoff backoff.Policy
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = 20
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = 30 * time.Second
	}
	if c.Name == "" {
		c.Name = "portalwatch"
	}
	return c
}

// DeadLetterQueue returns the name of queue's dead-letter queue.
func DeadLetterQueue(queue string) string { return queue + ".dlq" }

// Headers set on messages portalwatch dead-letters itself. RabbitMQ's own
// dead-lettering (after the delivery limit) records x-death instead.
const (
	HeaderReason      = "x-portalwatch-reason"
	HeaderSourceQueue = "x-portalwatch-source-queue"
	HeaderDeadAt      = "x-portalwatch-dead-at"
)

func dial(c Config, role string) (*amqp.Connection, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(c.Name + " " + role)
	conn, err := amqp.DialConfig(c.URL, amqp.Config{
		Heartbeat:  c.Heartbeat,
		Properties: props,
		Locale:     "en_US",
		Dial:       amqp.DefaultDial(5 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to RabbitMQ at %s: %w", redact(c.URL), err)
	}
	return conn, nil
}

// declareWorkQueue declares queue as a quorum queue whose rejected and
// over-delivered messages go, at least once, to its dead-letter queue. Quorum
// queues count deliveries, which is what makes a delivery limit possible.
func declareWorkQueue(ch *amqp.Channel, queue string, deliveryLimit int) error {
	dlq := DeadLetterQueue(queue)
	if _, err := ch.QueueDeclare(dlq, true, false, false, false, amqp.Table{
		amqp.QueueTypeArg: amqp.QueueTypeQuorum,
	}); err != nil {
		return fmt.Errorf("declare queue %s: %w", dlq, err)
	}
	_, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{
		amqp.QueueTypeArg:           amqp.QueueTypeQuorum,
		"x-delivery-limit":          int64(deliveryLimit),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": dlq,
		"x-dead-letter-strategy":    "at-least-once",
		amqp.QueueOverflowArg:       amqp.QueueOverflowRejectPublish,
	})
	if err != nil {
		return fmt.Errorf("declare queue %s: %w", queue, err)
	}
	return nil
}

// redact hides the password of an AMQP URL in messages.
func redact(raw string) string {
	u, err := amqpURI(raw)
	if err != nil {
		return "(unparsable AMQP URL)"
	}
	return u
}

func amqpURI(raw string) (string, error) {
	u, err := amqp.ParseURI(raw)
	if err != nil {
		return "", err
	}
	u.Password = ""
	u.Username = ""
	return fmt.Sprintf("%s://%s", u.Scheme, net.JoinHostPort(u.Host, fmt.Sprint(u.Port))), nil
}

// Permanent marks a handler error that no retry can fix, such as a message
// that cannot be decoded: the consumer sends the message to the dead-letter
// queue with the error as its reason instead of requeueing it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
