package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Handler handles one delivery. Returning nil acks it. Returning an error
// that is or wraps watch.ErrPermanent sends it to the dead-letter queue with the error as
// its reason. Returning one that is or wraps a *watch.Later (and not
// ErrPermanent) holds the delivery: unacked and with no worker until the
// Later's At (at most ConsumerConfig.MaxHold ahead), then a handler gets it
// again with Delivery.Holds one higher. Any other error returns it to the
// queue, where the broker's delivery limit eventually dead-letters a message
// that always fails. ctx is cancelled only when a graceful stop runs out of
// time.
type Handler func(ctx context.Context, d watch.Delivery) error

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	Config
	// Queue is the work queue to consume; it is declared with its
	// dead-letter queue on every connection.
	Queue string
	// Prefetch bounds the deliveries unacked at once: those being handled,
	// those waiting for a worker and those held (watch.Later). Default
	// Workers. A consumer whose handler holds deliveries wants more than
	// Workers: with Prefetch equal to Workers, each held delivery leaves a
	// worker with nothing to do until it is due.
	Prefetch int
	// Workers is how many deliveries are handled at once. Default
	// DefaultWorkers, 1.
	Workers int
	// DrainTimeout bounds how long a stop waits for handlers to finish before
	// cancelling them. Default DefaultDrainTimeout, 15s.
	DrainTimeout time.Duration
	// AckDelay is how long a handled delivery's ack may wait to be sent
	// together with others' (see acker); a quarter of Prefetch pending acks
	// are sent at once. Default DefaultAckDelay, 5ms; negative acks each
	// delivery at once.
	AckDelay time.Duration
	// MaxHold bounds how long a delivery is held after its handler returned
	// a *watch.Later: a Later's At further ahead is cut to MaxHold from now.
	// Each hold takes a prefetch slot, and RabbitMQ closes a channel whose
	// delivery stays unacked past its consumer_timeout (30 minutes by
	// default), so it is at most MaxHoldLimit. Default DefaultMaxHold, 1m.
	MaxHold time.Duration
	// HandBack makes a graceful stop return the deliveries the consumer
	// holds without counting them as deliveries: those not yet handed to
	// a worker, those held (watch.Later), and those whose handler the
	// drain's end cancelled are published again as copies that carry their
	// count so far (HeaderDeliveries), and then acked. RabbitMQ before 4.3
	// counts every return in x-delivery-count, a channel's close included,
	// so without it each stop of a program is one delivery more for every
	// message it held. The copies join the back of the queue, and
	// Config.DeliveryLimit still applies to the count with the carried
	// part: the consumer dead-letters a copy past it itself. A copy that
	// cannot be published is returned as before, counted.
	HandBack bool
}

// Defaults of ConsumerConfig, applied by WithDefaults.
const (
	DefaultWorkers      = 1
	DefaultDrainTimeout = 15 * time.Second
	DefaultAckDelay     = 5 * time.Millisecond
	DefaultMaxHold      = time.Minute
	// MaxHoldLimit is the longest MaxHold allowed: half RabbitMQ's default
	// consumer_timeout.
	MaxHoldLimit = 15 * time.Minute
)

// WithDefaults returns a copy of c with every unset (zero) field, its Config's
// included, given its default.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	c.Config = c.Config.WithDefaults()
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Prefetch == 0 {
		c.Prefetch = c.Workers
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.AckDelay == 0 {
		c.AckDelay = DefaultAckDelay
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultMaxHold
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field, its
// Config's included.
func (c ConsumerConfig) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.Queue == "" {
		errs = append(errs, errors.New("queue: ConsumerConfig.Queue is empty: name the queue to consume"))
	}
	if c.Workers < 0 || c.Prefetch < 0 || c.Prefetch > math.MaxUint16 {
		errs = append(errs, fmt.Errorf("queue: Workers %d, Prefetch %d: want at least 1, Prefetch at most %d", c.Workers, c.Prefetch, math.MaxUint16))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("queue: DrainTimeout is %s: want a positive duration", c.DrainTimeout))
	}
	errs = append(errs, config.Between("MaxHold", c.MaxHold, 0, MaxHoldLimit))
	return errors.Join(errs...)
}

// Consumer consumes one work queue with manual acks on its own connection and
// hands each delivery to a Handler on a pool of workers.
type Consumer struct {
	cfg        ConsumerConfig
	log        *slog.Logger
	handle     Handler
	deadLetter *Publisher
	conn       *connection
}

// consumerTag names the consumer on its channel, which carries no other.
const consumerTag = "portalwatch"

// NewConsumer returns a consumer of cfg.Queue that calls handle for each
// delivery and dead-letters through deadLetter, a publisher on a connection
// of its own. It does not connect until Run. It returns an error naming
// every field of cfg out of range.
func NewConsumer(cfg ConsumerConfig, log *slog.Logger, handle Handler, deadLetter *Publisher) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With("component", "amqp_consumer", "queue", cfg.Queue)
	return &Consumer{
		cfg:        cfg,
		log:        log,
		handle:     handle,
		deadLetter: deadLetter,
		conn:       newConnection(cfg.Config, "consumer "+cfg.Queue, log, cfg.Queue),
	}, nil
}

// Health returns nil while the consumer is consuming, or what it is waiting
// for.
func (c *Consumer) Health() error { return c.conn.Health() }

// Run consumes until ctx ends, reconnecting whenever the connection or channel
// is lost. When ctx ends it stops taking deliveries, lets handlers finish for
// up to DrainTimeout, cancels the rest (their deliveries go back to the queue
// when the connection closes, or as uncounted copies with HandBack) and
// returns nil. It never returns because the broker is down; it returns an
// error at once if Config.URL is unusable.
func (c *Consumer) Run(ctx context.Context) error {
	defer c.conn.Close()
	for {
		sess, deliveries, err := c.open(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("consume %s: %w", c.cfg.Queue, err) // a bad URL: no retry can help
		}
		ended := c.consume(ctx, sess, deliveries)
		if ctx.Err() != nil {
			return nil
		}
		c.log.Warn("RabbitMQ consumer session ended; reconnecting", "err", ended)
		c.conn.lost(sess, ended)
	}
}

// open returns a new session that is consuming the queue, waiting for the
// broker as long as ctx allows.
func (c *Consumer) open(ctx context.Context) (*session, <-chan amqp.Delivery, error) {
	var deliveries <-chan amqp.Delivery
	sess, err := c.conn.open(ctx, func(ch *amqp.Channel) error {
		// Per-consumer prefetch: quorum queues refuse global QoS.
		if err := ch.Qos(c.cfg.Prefetch, 0, false); err != nil {
			return fmt.Errorf("set prefetch: %w", err)
		}
		var err error
		deliveries, err = ch.Consume(c.cfg.Queue, consumerTag, false, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("consume %s: %w", c.cfg.Queue, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	c.log.Info("consuming", "prefetch", c.cfg.Prefetch, "workers", c.cfg.Workers)
	return sess, deliveries, nil
}

// consume hands sess's deliveries to the workers until ctx ends or the
// session breaks, then drains the workers; it returns why the session ended
// (nil on a stop). Every delivery is settled on sess's channel or not at all:
// the deliveries still held when it returns are dropped unsettled, and the
// broker returns them to the queue when the channel closes.
func (c *Consumer) consume(ctx context.Context, sess *session, deliveries <-chan amqp.Delivery) error {
	// Handlers get a context that survives the stop signal, so in-flight
	// work can finish, and is cancelled when the drain time is up.
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	acks := newAcker(sess.ch, c.cfg.Prefetch/4, c.cfg.AckDelay, func(err error) {
		c.log.Info("could not ack a delivery; the broker will deliver it again", "err", err)
	})
	// Acks still pending go out before the connection closes; on a dead
	// channel they fail, and the broker delivers those messages again.
	defer acks.Flush()
	// held is this session's alone: a delivery tag means nothing on
	// another channel.
	held := newHolder()
	work := make(chan job)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for j := range work {
				c.dispatch(handlerCtx, sess, j, acks, held)
			}
		})
	}
	pending, ended := c.feed(ctx, sess, deliveries, work, held)
	close(work)
	stopped := ended == nil
	if stopped && c.cfg.HandBack {
		// Before the drain, so that the copies are queued while the
		// handlers still run; workers take nothing more from work.
		c.handBackAll(sess, acks, append(pending, c.remaining(deliveries)...))
	}
	c.drain(ctx, &wg, cancelHandlers)
	if stopped && c.cfg.HandBack {
		c.handBackAll(sess, acks, held.takeAll())
	}
	if n := held.len(); n > 0 {
		c.log.Info("dropping held deliveries unsettled; the broker returns them to the queue", "held", n)
	}
	return ended
}

// feed passes deliveries to work until ctx ends or the session breaks: held
// deliveries that are due first, in the order they fell due, then new ones
// from the broker. It takes a new delivery only when it has none waiting for
// a worker, so the broker's prefetch, not feed, bounds what the consumer
// holds.
//
// On a stop it returns the delivery it had waiting for a worker, if any.
func (c *Consumer) feed(ctx context.Context, sess *session, deliveries <-chan amqp.Delivery, work chan<- job, held *holder) ([]job, error) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var next job     // the delivery waiting for a worker,
	waiting := false // if any
	for {
		var (
			in  <-chan amqp.Delivery
			out chan<- job
			due <-chan time.Time
		)
		if !waiting {
			j, ok, wait := held.due(time.Now())
			switch {
			case ok:
				next, waiting = j, true
			case wait >= 0:
				timer.Reset(wait) // since Go 1.23 no stale tick survives a Reset
				due = timer.C
			}
		}
		if waiting {
			out = work
		} else {
			in = deliveries
		}
		select {
		case <-ctx.Done():
			// Stop intake first; deliveries buffered, waiting for a worker
			// or held go back to the queue when the connection closes.
			if err := sess.ch.Cancel(consumerTag, false); err != nil {
				c.log.Warn("cancel consumer", "err", err)
			}
			if waiting {
				return []job{next}, nil
			}
			return nil, nil
		case e := <-sess.connClosed:
			return nil, closeReason("connection", e)
		case e := <-sess.chClosed:
			return nil, closeReason("channel", e)
		case d, ok := <-in:
			if !ok {
				return nil, errors.New("delivery channel closed")
			}
			next, waiting = job{d: d}, true
		case out <- next:
			next, waiting = job{}, false
		case <-due:
		case <-held.wake:
		}
	}
}

// drain waits for the workers. On a stop (ctx ended) handlers get up to
// DrainTimeout to finish; when the session broke they are cancelled at once,
// since none of them can ack any more.
func (c *Consumer) drain(ctx context.Context, workers *sync.WaitGroup, cancelHandlers context.CancelFunc) {
	drained := make(chan struct{})
	go func() { workers.Wait(); close(drained) }()
	if ctx.Err() == nil {
		cancelHandlers()
		<-drained
		return
	}
	timeout := time.NewTimer(c.cfg.DrainTimeout)
	defer timeout.Stop()
	select {
	case <-drained:
	case <-timeout.C:
		c.log.Warn("drain timeout: cancelling handlers; their deliveries return to the queue", "timeout", c.cfg.DrainTimeout.String())
		cancelHandlers()
		<-drained
	}
}

func closeReason(what string, e *amqp.Error) error {
	if e == nil {
		return fmt.Errorf("%s closed", what)
	}
	return fmt.Errorf("%s closed: %w", what, e)
}

// dispatch runs the handler for one delivery and settles it on the channel it
// came from: acks through acks, which may send them later and together;
// nacks at once. If that channel is gone, settling fails and the broker,
// which has already requeued the delivery, sends it again. A delivery whose
// handler returned a *watch.Later is not settled but held.
func (c *Consumer) dispatch(ctx context.Context, sess *session, j job, acks *acker, held *holder) {
	d := j.d
	if n := deliveryCount(d); c.cfg.HandBack && n > int64(c.cfg.DeliveryLimit) {
		// Only a handed-back copy gets here: the broker dead-letters the
		// rest at the limit.
		c.deadLetterOrReturn(ctx, d, acks, watch.Permanent(fmt.Errorf("delivered %d times, over the delivery limit of %d", n, c.cfg.DeliveryLimit)))
		return
	}
	err := c.safeHandle(ctx, j)
	var later *watch.Later
	switch {
	case ctx.Err() != nil && err != nil && c.cfg.HandBack && !watch.IsPermanent(err) && !sess.broken():
		// The stop's drain ran out: not the message's failure.
		c.handBackAll(sess, acks, []job{j})
		return
	case err == nil:
		acks.Ack(d.DeliveryTag)
		return
	case watch.IsPermanent(err):
		c.deadLetterOrReturn(ctx, d, acks, err)
		return
	case errors.As(err, &later):
		c.hold(j, later, held)
		return
	default:
		c.log.Warn("handler failed; returning message to the queue", "err", err, "delivery_count", deliveryCount(d))
	}
	if err := d.Nack(false, true); err != nil {
		c.log.Info("could not settle delivery; the broker will deliver it again", "err", err)
	}
	acks.Released(d.DeliveryTag)
}

// deadLetterOrReturn dead-letters d with reason, or returns it to the
// queue when that fails.
func (c *Consumer) deadLetterOrReturn(ctx context.Context, d amqp.Delivery, acks *acker, reason error) {
	c.log.Warn("dead-lettering message", "err", reason, "redelivered", d.Redelivered)
	dlErr := c.deadLetterMessage(ctx, d, reason)
	if dlErr == nil {
		acks.Ack(d.DeliveryTag)
		return
	}
	c.log.Error("dead-lettering failed; returning message to the queue", "err", dlErr)
	if err := d.Nack(false, true); err != nil {
		c.log.Info("could not settle delivery; the broker will deliver it again", "err", err)
	}
	acks.Released(d.DeliveryTag)
}

// remaining returns the deliveries the broker sent before it confirmed
// the consumer's cancel, which the client passes on until it closes the
// delivery channel; it waits at most a second for that.
func (c *Consumer) remaining(deliveries <-chan amqp.Delivery) []job {
	var out []job
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return out
			}
			out = append(out, job{d: d})
		case <-timeout.C:
			return out
		}
	}
}

// handBackAll publishes a copy of each delivery of jobs to the queue with
// its count so far, and acks the delivery once the copy is confirmed
// (ConsumerConfig.HandBack). A delivery whose copy fails stays unsettled,
// and the broker returns it, counted, when the channel closes.
func (c *Consumer) handBackAll(sess *session, acks *acker, jobs []job) {
	if len(jobs) == 0 || c.deadLetter == nil || sess.broken() {
		return
	}
	msgs := make([]watch.Message, len(jobs))
	for i, j := range jobs {
		msgs[i] = watch.Message{Body: j.d.Body, Headers: map[string]string{HeaderDeliveries: strconv.FormatInt(deliveryCount(j.d), 10)}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ConfirmTimeout)
	defer cancel()
	if err := c.deadLetter.Publish(ctx, c.cfg.Queue, msgs...); err != nil {
		c.log.Warn("could not hand deliveries back uncounted; the broker returns them, counted", "deliveries", len(jobs), "err", err)
		return
	}
	for _, j := range jobs {
		acks.Ack(j.d.DeliveryTag)
	}
	c.log.Info("handed deliveries back to the queue uncounted", "deliveries", len(jobs))
}

// hold keeps j, unsettled, until later's At, cut to MaxHold from now; the
// feed loop then hands it to a worker again. A nil later means at once.
func (c *Consumer) hold(j job, later *watch.Later, held *holder) {
	now := time.Now()
	at, reason := now, ""
	j.state = nil
	if later != nil {
		at, reason, j.state = later.At, later.Reason, later.State
	}
	if limit := now.Add(c.cfg.MaxHold); at.After(limit) {
		c.log.Info("hold cut to MaxHold", "wanted_ms", at.Sub(now).Milliseconds(), "max_hold_ms", c.cfg.MaxHold.Milliseconds(), "reason", reason)
		at = limit
	}
	if j.holds == 0 {
		j.heldSince = now
	}
	j.holds++
	c.log.Debug("holding delivery", "wait_ms", max(at.Sub(now), 0).Milliseconds(), "holds", j.holds, "reason", reason)
	held.hold(j, at)
}

// safeHandle turns a handler panic into an ordinary failure, so one poison
// message costs a requeue (and at the delivery limit a dead letter) instead
// of the whole process.
func (c *Consumer) safeHandle(ctx context.Context, j job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return c.handle(ctx, watch.Delivery{
		Body:          j.d.Body,
		Redelivered:   j.d.Redelivered,
		DeliveryCount: deliveryCount(j.d),
		Holds:         j.holds,
		HeldSince:     j.heldSince,
		State:         j.state,
	})
}

func (c *Consumer) deadLetterMessage(ctx context.Context, d amqp.Delivery, reason error) error {
	if c.deadLetter == nil {
		return errors.New("no dead-letter publisher configured")
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConfirmTimeout)
	defer cancel()
	return c.deadLetter.Publish(ctx, DeadLetterQueue(c.cfg.Queue), watch.Message{
		Body: d.Body,
		Headers: map[string]string{
			HeaderReason:      reason.Error(),
			HeaderSourceQueue: c.cfg.Queue,
			HeaderDeadAt:      time.Now().UTC().Format(time.RFC3339Nano),
		},
	})
}

// deliveryCount is how many times d was delivered before: the broker's
// x-delivery-count, plus the count a handed-back copy carries
// (HeaderDeliveries).
func deliveryCount(d amqp.Delivery) int64 {
	var n int64
	switch c := d.Headers["x-delivery-count"].(type) {
	case int64:
		n = c
	case int32:
		n = int64(c)
	case int:
		n = int64(c)
	}
	if carried, ok := d.Headers[HeaderDeliveries].(string); ok {
		if c, err := strconv.ParseInt(carried, 10, 64); err == nil && c > 0 {
			n += c
		}
	}
	return n
}
