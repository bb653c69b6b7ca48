package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// DeadLetter is a message in a dead-letter queue.
type DeadLetter struct {
	Body []byte
	// Reason says why it died: portalwatch's own reason (a message that could
	// not be decoded, say), or RabbitMQ's (delivery_limit, rejected, …).
	Reason string
	// Queue is the work queue it came from.
	Queue string
	// DeadAt is when it was dead-lettered, when known.
	DeadAt time.Time
}

// Dead gives an operator the dead-letter queues of the work queues: look,
// send back, throw away. It opens a connection per call.
type Dead struct {
	cfg Config
}

// NewDead returns a Dead for the broker in cfg, or an error naming every
// field of cfg out of range.
func NewDead(cfg Config) (*Dead, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Dead{cfg: cfg}, nil
}

func (d *Dead) channel() (*amqp.Connection, *amqp.Channel, error) {
	ns, err := newNodes(d.cfg.URL, rand.IntN(1<<16))
	if err != nil {
		return nil, nil, err
	}
	conn, _, err := dialAny(d.cfg, "watchctl", ns)
	if err != nil {
		return nil, nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	return conn, ch, nil
}

// DeadReport is what one dead-letter queue holds.
type DeadReport struct {
	// Queue is the dead-letter queue's name.
	Queue string
	// Count is how many messages it holds.
	Count int
	// Letters are the first of them, up to the sample Inspect was asked
	// for.
	Letters []DeadLetter
}

// ReasonCount is how many of a report's letters died for one reason.
type ReasonCount struct {
	Reason string
	Count  int
}

// Reasons counts the report's letters by reason, most frequent first, then
// by reason.
func (r DeadReport) Reasons() []ReasonCount {
	counts := map[string]int{}
	for _, l := range r.Letters {
		counts[l.Reason]++
	}
	out := make([]ReasonCount, 0, len(counts))
	for reason, n := range counts {
		out = append(out, ReasonCount{Reason: reason, Count: n})
	}
	slices.SortFunc(out, func(a, b ReasonCount) int {
		return cmp.Or(b.Count-a.Count, strings.Compare(a.Reason, b.Reason))
	})
	return out
}

// Inspect returns the count of queue's dead-letter queue and up to sample
// of its first messages, which stay where they are (see List).
func (d *Dead) Inspect(queue string, sample int) (DeadReport, error) {
	r := DeadReport{Queue: DeadLetterQueue(queue)}
	var err error
	if r.Count, err = d.Count(queue); err != nil || r.Count == 0 || sample <= 0 {
		return r, err
	}
	r.Letters, err = d.List(queue, sample)
	return r, err
}

// Count returns how many messages queue's dead-letter queue holds; 0 if it
// was never declared.
func (d *Dead) Count(queue string) (int, error) {
	conn, ch, err := d.channel()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	q, err := ch.QueueDeclarePassive(DeadLetterQueue(queue), true, false, false, false, nil)
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", DeadLetterQueue(queue), err)
	}
	return q.Messages, nil
}

// List returns up to limit messages of queue's dead-letter queue without
// removing them: they are fetched unacked and returned when the connection
// closes.
func (d *Dead) List(queue string, limit int) ([]DeadLetter, error) {
	conn, ch, err := d.channel()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []DeadLetter
	for len(out) < limit {
		m, ok, err := ch.Get(DeadLetterQueue(queue), false)
		if isNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", DeadLetterQueue(queue), err)
		}
		if !ok {
			break
		}
		out = append(out, describe(m, queue))
	}
	return out, nil
}

// Requeue moves up to limit messages from queue's dead-letter queue back to
// queue, each acked in the dead-letter queue only after the broker confirmed
// its copy in the work queue. It returns how many it moved.
func (d *Dead) Requeue(ctx context.Context, queue string, limit int, pub *Publisher) (int, error) {
	conn, ch, err := d.channel()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	moved := 0
	for moved < limit {
		m, ok, err := ch.Get(DeadLetterQueue(queue), false)
		if isNotFound(err) || !ok {
			return moved, nil
		}
		if err != nil {
			return moved, fmt.Errorf("read %s: %w", DeadLetterQueue(queue), err)
		}
		// A fresh message: the old delivery count would dead-letter it again.
		if err := pub.Publish(ctx, queue, watch.Message{Body: m.Body}); err != nil {
			return moved, fmt.Errorf("requeue to %s: %w", queue, err)
		}
		if err := m.Ack(false); err != nil {
			return moved, fmt.Errorf("remove requeued message from %s (it is now in both queues): %w", DeadLetterQueue(queue), err)
		}
		moved++
	}
	return moved, nil
}

// Purge deletes every message of queue's dead-letter queue and returns how
// many there were.
func (d *Dead) Purge(queue string) (int, error) {
	conn, ch, err := d.channel()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	n, err := ch.QueuePurge(DeadLetterQueue(queue), false)
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", DeadLetterQueue(queue), err)
	}
	return n, nil
}

func describe(m amqp.Delivery, queue string) DeadLetter {
	dl := DeadLetter{Body: m.Body, Queue: queue}
	if r, ok := m.Headers[HeaderReason].(string); ok {
		dl.Reason = r
		if at, ok := m.Headers[HeaderDeadAt].(string); ok {
			dl.DeadAt, _ = time.Parse(time.RFC3339Nano, at)
		}
		return dl
	}
	// Dead-lettered by RabbitMQ: x-death holds one entry per (queue, reason).
	if deaths, ok := m.Headers["x-death"].([]any); ok && len(deaths) > 0 {
		if death, ok := deaths[0].(amqp.Table); ok {
			reason, _ := death["reason"].(string)
			count, _ := death["count"].(int64)
			switch reason {
			case "delivery_limit":
				dl.Reason = fmt.Sprintf("returned to the queue too often (delivery limit; %d deaths)", count)
			case "":
				dl.Reason = "dead-lettered by RabbitMQ"
			default:
				dl.Reason = "dead-lettered by RabbitMQ: " + reason
			}
			if t, ok := death["time"].(time.Time); ok {
				dl.DeadAt = t
			}
		}
	}
	if dl.Reason == "" {
		dl.Reason = "unknown"
	}
	return dl
}

func isNotFound(err error) bool {
	var e *amqp.Error
	return errors.As(err, &e) && (e.Code == amqp.NotFound || strings.Contains(e.Reason, "NOT_FOUND"))
}
