package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// errClosed is what open returns once Close has run.
var errClosed = errors.New("RabbitMQ connection closed by its owner")

// connection owns the life of one AMQP connection, for a Publisher or a
// Consumer alike: it dials, declares the work queues on a fresh channel,
// waits with capped, jittered backoff between failed attempts, and reports
// health. It never repairs a session in place: a session that failed is
// closed and the next open dials a new one, so no delivery or confirm tag of
// an old channel can be used on a new one.
//
// It is safe for concurrent use; one goroutine dials while the others wait
// for it or for their context.
type connection struct {
	cfg    Config
	role   string   // names the connection in the broker's list, e.g. "publisher"
	queues []string // work queues (with their dead-letter queues) declared on every session
	log    *slog.Logger
	// badURL is why cfg.URL cannot be used; no retry can fix it.
	badURL error

	// lock guards the fields below; it is a channel so that waiting for it
	// honours a context.
	lock     chan struct{}
	nodes    *nodes
	cur      *session
	failures int  // attempts failed since the last session that worked
	retry    bool // the last session was lost: wait before dialling again
	closed   bool
	state
}

func newConnection(cfg Config, role string, log *slog.Logger, queues ...string) *connection {
	c := &connection{cfg: cfg, role: role, queues: queues, log: log, lock: make(chan struct{}, 1)}
	c.setWaiting(errors.New("not connected yet"))
	ns, err := newNodes(cfg.URL, rand.IntN(1<<16))
	if err != nil {
		c.badURL = err
		c.setWaiting(err)
		return c
	}
	c.nodes = ns
	return c
}

// session is one AMQP connection with the one channel portalwatch uses on it.
// Both are disposable: after any error on either, the session is dropped
// whole.
type session struct {
	conn       *amqp.Connection
	ch         *amqp.Channel
	url        string // the node's
	connClosed <-chan *amqp.Error
	chClosed   <-chan *amqp.Error
}

func (s *session) broken() bool { return s.conn.IsClosed() || s.ch.IsClosed() }

// open returns the current session if it is alive, or dials a new one: a
// connection, a channel, the work queues declared, then setup (confirm mode
// for a publisher; prefetch and consume for a consumer). A failed attempt, or
// a new session after a lost one, waits a backoff first; attempts go on until
// one works, ctx ends or Close runs. Each attempt tries every node of
// cfg.URL once, starting after the node of the last session. A URL that does
// not parse fails at once.
func (c *connection) open(ctx context.Context, setup func(*amqp.Channel) error) (*session, error) {
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.lock }()
	if c.badURL != nil {
		return nil, c.badURL
	}
	if c.cur != nil {
		if !c.cur.broken() {
			return c.cur, nil
		}
		c.dropLocked(c.cur, errors.New("connection lost"))
	}
	for {
		if c.closed {
			return nil, errClosed
		}
		if c.retry {
			if err := c.cfg.Backoff.Sleep(ctx, c.failures); err != nil {
				return nil, fmt.Errorf("waiting for RabbitMQ: %w (last error: %v)", err, c.Health())
			}
		}
		c.retry = true
		s, err := c.dialSession(setup)
		if err != nil {
			c.failures++
			c.setWaiting(err)
			c.log.Warn("RabbitMQ unavailable; retrying", "attempt", c.failures, "err", err)
			continue
		}
		c.log.Info("connected to RabbitMQ", "node", redact(s.url), "attempts", c.failures+1)
		c.cur, c.failures, c.retry = s, 0, false
		c.setReady()
		return s, nil
	}
}

func (c *connection) dialSession(setup func(*amqp.Channel) error) (*session, error) {
	conn, url, err := dialAny(c.cfg, c.role, c.nodes)
	if err != nil {
		return nil, err
	}
	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open channel: %w", err)
	}
	chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
	for _, q := range c.queues {
		if err := declareWorkQueue(ch, q, c.cfg.DeliveryLimit); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if setup != nil {
		if err := setup(ch); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return &session{conn: conn, ch: ch, url: url, connClosed: connClosed, chClosed: chClosed}, nil
}

// lost drops s after an error on it, so that the next open dials anew after a
// backoff. A session that is no longer current (another goroutine already
// dropped it) is only closed.
func (c *connection) lost(s *session, reason error) {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	c.dropLocked(s, reason)
}

func (c *connection) dropLocked(s *session, reason error) {
	if c.cur == s {
		c.cur, c.retry = nil, true
		c.setWaiting(reason)
	}
	// Closing the connection closes its channel; closing a channel of a dead
	// connection can hang (amqp091-go#88).
	s.conn.Close()
}

// Close closes the current session and makes every later open fail. It waits
// for an open in progress to give up (its context ending). It is safe to call
// more than once.
func (c *connection) Close() error {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	c.closed = true
	c.setWaiting(errClosed)
	if c.cur == nil {
		return nil
	}
	err := c.cur.conn.Close()
	c.cur = nil
	if err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("close RabbitMQ %s connection: %w", c.role, err)
	}
	return nil
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
