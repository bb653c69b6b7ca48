package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Message is one message to publish.
type Message struct {
	Body    []byte
	Headers map[string]string
}

// Publisher publishes persistent messages on its own connection and waits for
// the broker's confirm of each, so a message it reports as published is on
// disk (on a quorum of replicas) in the broker. It is safe for concurrent use:
// publishes of many goroutines share one confirm-mode channel and wait for
// their confirms independently.
type Publisher struct {
	cfg    Config
	log    *slog.Logger
	queues []string

	// lock guards sess; it is a channel so that waiting for it honours ctx.
	lock chan struct{}
	sess *pubSession
	state
}

type pubSession struct {
	conn *amqp.Connection
	ch   *amqp.Channel
}

func (s *pubSession) broken() bool { return s.conn.IsClosed() || s.ch.IsClosed() }

// NewPublisher returns a publisher for the given work queues, which it
// declares (with their dead-letter queues) on every new connection: RabbitMQ
// confirms, and then drops, a message routed to a queue that does not exist.
// It does not connect until the first Publish.
func NewPublisher(cfg Config, log *slog.Logger, queues ...string) *Publisher {
	p := &Publisher{
		cfg:    cfg.WithDefaults(),
		log:    log.With("component", "amqp_publisher"),
		queues: queues,
		lock:   make(chan struct{}, 1),
	}
	p.setWaiting(errors.New("not connected yet"))
	return p
}

// Publish publishes msgs to queue and returns once the broker has confirmed
// every one of them. Messages that are not confirmed (the connection broke, the
// broker refused them) are published again after a backoff until they are, or
// until ctx ends; then the error says how many were left. A message may thus
// reach the queue twice; consumers absorb that.
func (p *Publisher) Publish(ctx context.Context, queue string, msgs ...Message) error {
	pending := msgs
	for attempt := 0; ; attempt++ {
		sess, err := p.session(ctx)
		if err != nil {
			return fmt.Errorf("publish %d messages to %s: %w", len(pending), queue, err)
		}
		var failed []Message
		failed, err = p.publishOnce(ctx, sess, queue, pending)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("publish to %s: %d of %d messages unconfirmed: %w", queue, len(failed), len(msgs), ctx.Err())
		}
		p.log.Warn("publish failed; retrying", "queue", queue, "unconfirmed", len(failed), "attempt", attempt+1, "err", err)
		pending = failed
		if err := p.cfg.Backoff.Sleep(ctx, attempt); err != nil {
			return fmt.Errorf("publish to %s: %d of %d messages unconfirmed: %w", queue, len(pending), len(msgs), err)
		}
	}
}

// Connect dials the broker (retrying with backoff) unless a connection is
// up, so that health reports the truth before the first publish. It returns
// nil once connected, or ctx's error.
func (p *Publisher) Connect(ctx context.Context) error {
	_, err := p.session(ctx)
	return err
}

// publishOnce sends every message, then waits for all confirms; it returns the
// messages that were not confirmed.
func (p *Publisher) publishOnce(ctx context.Context, sess *pubSession, queue string, msgs []Message) ([]Message, error) {
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
		failed  []Message
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
	if sendErr != nil || waitErr != nil || sess.broken() {
		// The channel may be wedged; a fresh connection costs little.
		p.discard(sess, errors.Join(sendErr, waitErr))
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, errors.Join(sendErr, waitErr, nackError(nacked))
}

func nackError(n int) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("broker refused %d messages (queue full or broker error)", n)
}

// session returns the live session, dialling a new one with backoff if there
// is none. Only one goroutine dials; the others wait for it or for ctx.
func (p *Publisher) session(ctx context.Context) (*pubSession, error) {
	select {
	case p.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.lock }()
	if p.sess != nil && !p.sess.broken() {
		return p.sess, nil
	}
	for attempt := 0; ; attempt++ {
		sess, err := p.open()
		if err == nil {
			p.sess = sess
			p.setReady()
			if attempt > 0 {
				p.log.Info("connected to RabbitMQ", "attempts", attempt+1)
			}
			return sess, nil
		}
		p.setWaiting(err)
		p.log.Warn("RabbitMQ unavailable; retrying", "attempt", attempt+1, "err", err)
		if err := p.cfg.Backoff.Sleep(ctx, attempt); err != nil {
			return nil, fmt.Errorf("waiting for RabbitMQ: %w (last error: %v)", err, p.Health())
		}
	}
}

func (p *Publisher) open() (*pubSession, error) {
	conn, err := dial(p.cfg, "publisher")
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open channel: %w", err)
	}
	for _, q := range p.queues {
		if err := declareWorkQueue(ch, q, p.cfg.DeliveryLimit); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if err := ch.Confirm(false); err != nil {
		conn.Close()
		return nil, fmt.Errorf("enable publisher confirms: %w", err)
	}
	return &pubSession{conn: conn, ch: ch}, nil
}

// discard closes sess if it is still the current session, so the next
// publish dials anew.
func (p *Publisher) discard(sess *pubSession, reason error) {
	p.lock <- struct{}{}
	defer func() { <-p.lock }()
	if p.sess == sess {
		p.sess = nil
		p.setWaiting(reason)
	}
	// Closing the connection closes its channel; closing a channel of a dead
	// connection can hang (amqp091-go#88).
	sess.conn.Close()
}

// Close closes the connection. Publishes in progress fail. It is safe to call
// more than once.
func (p *Publisher) Close() error {
	p.lock <- struct{}{}
	defer func() { <-p.lock }()
	if p.sess == nil {
		return nil
	}
	err := p.sess.conn.Close()
	p.sess = nil
	if err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("close RabbitMQ publisher: %w", err)
	}
	return nil
}

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

// state tracks whether a connection is up, for /healthz.
type state struct {
	mu  sync.Mutex
	err error
}

func (s *state) setReady() {
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
}

func (s *state) setWaiting(err error) {
	if err == nil {
		err = errors.New("reconnecting")
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// Health returns nil while connected, or what the connection is waiting for.
func (s *state) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
