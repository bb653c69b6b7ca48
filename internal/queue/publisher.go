package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Publisher publishes persistent messages on its own connection and waits for
// the broker's confirm of each, so a message it reports as published is on
// disk (on a quorum of replicas) in the broker. It is safe for concurrent use:
// publishes of many goroutines share one confirm-mode channel and wait for
// their confirms independently.
type Publisher struct {
	cfg  Config
	log  *slog.Logger
	conn *connection
}

// NewPublisher returns a publisher for the given work queues, which it
// declares (with their dead-letter queues) on every new connection: RabbitMQ
// confirms, and then drops, a message routed to a queue that does not exist.
// It does not connect until the first Publish or Connect. It returns an
// error naming every field of cfg out of range.
func NewPublisher(cfg Config, log *slog.Logger, queues ...string) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With("component", "amqp_publisher")
	return &Publisher{cfg: cfg, log: log, conn: newConnection(cfg, "publisher", log, queues...)}, nil
}

// Publish publishes msgs to queue and returns once the broker has confirmed
// every one of them. Messages that are not confirmed (the connection broke, the
// broker refused them) are published again after a backoff until they are, or
// until ctx ends; then the error says how many were left. A message may thus
// reach the queue twice; consumers absorb that.
func (p *Publisher) Publish(ctx context.Context, queue string, msgs ...watch.Message) error {
	pending := msgs
	for attempt := 0; ; attempt++ {
		sess, err := p.conn.open(ctx, enableConfirms)
		if err != nil {
			return fmt.Errorf("publish %d messages to %s: %w", len(pending), queue, err)
		}
		failed, refused, err := p.publishOnce(ctx, sess, queue, pending)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("publish to %s: %d of %d messages unconfirmed: %w", queue, len(failed), len(msgs), ctx.Err())
		}
		p.log.Warn("publish failed; retrying", "queue", queue, "unconfirmed", len(failed), "attempt", attempt+1, "err", err)
		pending = failed
		if !refused {
			continue // the connection was lost; it backs off before it dials again
		}
		// Refused by the broker (a full queue, say): wait longer each time.
		if err := p.cfg.Backoff.Sleep(ctx, attempt); err != nil {
			return fmt.Errorf("publish to %s: %d of %d messages unconfirmed: %w", queue, len(pending), len(msgs), err)
		}
	}
}

// Connect dials the broker (retrying with backoff) unless a connection is
// up, so that health reports the truth before the first publish. It returns
// nil once connected, or ctx's error.
func (p *Publisher) Connect(ctx context.Context) error {
	_, err := p.conn.open(ctx, enableConfirms)
	return err
}

// Health returns nil while the publisher's connection is up, or what it is
// waiting for.
func (p *Publisher) Health() error { return p.conn.Health() }

func enableConfirms(ch *amqp.Channel) error {
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("enable publisher confirms: %w", err)
	}
	return nil
}

// publishOnce sends every message, then waits for all confirms; it returns the
// messages that were not confirmed and whether the broker refused (nacked)
// any. Any failure drops the session, a refusal included: a quorum queue
// whose leader was lost while this channel was opened can go on refusing
// every publish on that channel while a fresh one is served (RabbitMQ 3.10,
// seen in chaos/cluster_test.go).
func (p *Publisher) publishOnce(ctx context.Context, sess *session, queue string, msgs []watch.Message) (failed []watch.Message, refused bool, err error) {
	confirms := make([]*amqp.DeferredConfirmation, len(msgs))
	var sendErr error
	for i, m := range msgs {
		dc, err := sess.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent,
			ContentType:  "application/json",
			Timestamp:    time.Now(),
			Headers:      table(m.Headers),
			Body:         m.Body,
		})
		if err != nil {
			sendErr = fmt.Errorf("send: %w", err)
			break
		}
		confirms[i] = dc
	}
	waitCtx, cancel := context.WithTimeout(ctx, p.cfg.ConfirmTimeout)
	defer cancel()
	var (
		waitErr error
		nacked  int
	)
	for i, dc := range confirms {
		if dc == nil {
			failed = append(failed, msgs[i])
			continue
		}
		ok, err := dc.WaitContext(waitCtx)
		switch {
		case err != nil:
			waitErr = fmt.Errorf("wait for confirm: %w", err)
			failed = append(failed, msgs[i])
		case !ok:
			nacked++
			failed = append(failed, msgs[i])
		}
	}
	if len(failed) == 0 && !sess.broken() {
		return nil, false, nil
	}
	// The channel may be wedged; a fresh connection costs little.
	err = errors.Join(sendErr, waitErr, nackError(nacked))
	if err == nil {
		err = errors.New("publish channel closed")
	}
	p.conn.lost(sess, err)
	if len(failed) == 0 {
		return nil, false, nil
	}
	return failed, nacked > 0, err
}

func nackError(n int) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("broker refused %d messages (queue full or broker error)", n)
}

// Close closes the connection; publishes in progress fail, and so do later
// ones. It is safe to call more than once.
func (p *Publisher) Close() error { return p.conn.Close() }

func table(h map[string]string) amqp.Table {
	if len(h) == 0 {
		return nil
	}
	t := make(amqp.Table, len(h))
	for k, v := range h {
		t[k] = v
	}
	return t
}
