// Package queue is portalwatch's RabbitMQ adapter: work queues with
// dead-letter queues, a publisher that waits for the broker's confirms, and a
// consumer with manual acks, prefetch and a worker pool. It owns reconnection:
// each connection is redialled with capped, jittered backoff and the topology
// redeclared; deliveries in flight on a lost channel are dropped unacked (the
// broker requeues them) and are never acked on another channel. Given a
// cluster's nodes, a connection starts at a random one and moves to the next
// when its node is lost; quorum queues keep the messages on the surviving
// replicas.
//
// A handler may hold its delivery for later by returning a *watch.Later: the
// consumer keeps the delivery unacked, with no worker, until it is due (at
// most ConsumerConfig.MaxHold ahead), then hands it to a worker again. Held
// deliveries belong to their session like any other: a stop or a lost
// connection drops them unsettled, the broker returns them to the queue, and
// none is handed to a worker of a later session.
//
// amqp091-go's own Config.Recovery is deliberately left off: it restarts
// delivery and confirm tags at 1, so an ack meant for a delivery of the old
// channel could acknowledge a different message of the new one.
package queue

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
)

// Config holds what both publishers and consumers need.
type Config struct {
	// URL is the broker's AMQP URL, or a comma-separated list of the URLs of
	// a cluster's nodes ("amqp://u:p@mq1:5672/,amqp://u:p@mq2:5672/"), each
	// amqp:// or amqps:// with a host. Each connection starts at a random
	// node and, when that node is lost or refuses, moves on to the next one
	// in the list. Default DefaultURL.
	URL string `env:"AMQP_URL"`
	// Name identifies the process in the broker's connection list.
	Name string
	// DeliveryLimit is how many times a message may be returned to a work
	// queue before RabbitMQ dead-letters it, 1 to 1000. It is a queue
	// argument, fixed when the queue is first declared. Default 20.
	DeliveryLimit int `env:"PORTALWATCH_DELIVERY_LIMIT"`
	// Heartbeat is the AMQP heartbeat interval; a dead broker is noticed after
	// about two of them. Default 10s.
	Heartbeat time.Duration
	// ConfirmTimeout bounds the wait for the broker's confirm of a publish
	// before the connection is considered broken. Default 30s.
	ConfirmTimeout time.Duration
	// Backoff spaces reconnection attempts. Default backoff.Default.
	Backoff backoff.Policy
}

// Defaults of Config, applied by WithDefaults.
const (
	DefaultURL            = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultDeliveryLimit  = 20
	DefaultHeartbeat      = 10 * time.Second
	DefaultConfirmTimeout = 30 * time.Second
	DefaultName           = "portalwatch"
)

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.DeliveryLimit == 0 {
		c.DeliveryLimit = DefaultDeliveryLimit
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.ConfirmTimeout == 0 {
		c.ConfirmTimeout = DefaultConfirmTimeout
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Backoff == (backoff.Policy{}) {
		c.Backoff = backoff.Default
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field. Its
// errors never show a password of the URL.
func (c Config) Validate() error {
	return errors.Join(
		validURLs(c.URL),
		config.Between("DeliveryLimit", c.DeliveryLimit, 1, 1000),
		config.AtLeast("Heartbeat", c.Heartbeat, 0),
		config.AtLeast("ConfirmTimeout", c.ConfirmTimeout, 0),
	)
}

// Named returns c with Name set for a process of program, as the broker's
// connection list shows it: "portalwatch crawler pid 4242".
func (c Config) Named(program string) Config {
	c.Name = fmt.Sprintf("portalwatch %s pid %d", program, os.Getpid())
	return c
}

// validURLs checks the comma-separated node URLs one by one, naming a bad
// entry by its position so that a person finds it in a long list.
func validURLs(list string) error {
	parts := strings.Split(list, ",")
	var errs []error
	for i, p := range parts {
		p = strings.TrimSpace(p)
		entry := ""
		if len(parts) > 1 {
			entry = fmt.Sprintf("entry %d: ", i+1)
		}
		if p == "" {
			errs = append(errs, config.Invalid("URL", list, entry+"empty: separate node URLs with single commas"))
			continue
		}
		if err := config.URL("URL", p, "amqp", "amqps"); err != nil {
			var fe *config.FieldError
			if errors.As(err, &fe) {
				fe.Want = entry + fe.Want
			}
			errs = append(errs, err)
			continue
		}
		if u, _ := url.Parse(p); u.Host == "" {
			errs = append(errs, config.Invalid("URL", u.Redacted(), entry+"want a host, as in amqp://user:password@host:5672/"))
		}
	}
	return errors.Join(errs...)
}

// Names are the work queues' names. Their dead-letter queues are the same
// names plus ".dlq".
type Names struct {
	// Jobs is the job queue, from the scheduler to the crawlers. Default
	// job_queue.
	Jobs string `env:"PORTALWATCH_JOB_QUEUE"`
	// Tasks is the task queue, from the crawlers to the processors. Default
	// task_queue.
	Tasks string `env:"PORTALWATCH_TASK_QUEUE"`
	// Renders is the render queue, from the scheduler to the renderers:
	// the jobs of pages checked in headless Chromium. Default
	// render_queue.
	Renders string `env:"PORTALWATCH_RENDER_QUEUE"`
}

// WithDefaults returns n with each unset name given its default.
func (n Names) WithDefaults() Names {
	if n.Jobs == "" {
		n.Jobs = "job_queue"
	}
	if n.Tasks == "" {
		n.Tasks = "task_queue"
	}
	if n.Renders == "" {
		n.Renders = "render_queue"
	}
	return n
}

// Validate checks each name and that they differ.
func (n Names) Validate() error {
	errs := []error{config.Name("Jobs", n.Jobs), config.Name("Tasks", n.Tasks)}
	if n.Jobs == n.Tasks {
		errs = append(errs, config.Invalid("Tasks", n.Tasks, "want a name other than {Jobs}'s: the two queues must differ"))
	}
	if n.Renders != "" {
		errs = append(errs, config.Name("Renders", n.Renders))
		if n.Renders == n.Jobs || n.Renders == n.Tasks {
			errs = append(errs, config.Invalid("Renders", n.Renders, "want a name other than {Jobs}'s and {Tasks}'s: rendered pages have their own queue"))
		}
	}
	return errors.Join(errs...)
}

// DeadLetterQueue returns the name of queue's dead-letter queue.
func DeadLetterQueue(queue string) string { return queue + ".dlq" }

// Headers set on messages portalwatch dead-letters itself. RabbitMQ's own
// dead-lettering (after the delivery limit) records x-death instead.
const (
	HeaderReason      = "x-portalwatch-reason"
	HeaderSourceQueue = "x-portalwatch-source-queue"
	HeaderDeadAt      = "x-portalwatch-dead-at"
	// HeaderDeliveries is carried by a message a consumer handed back at a
	// graceful stop (ConsumerConfig.HandBack): the deliveries of the
	// message before the copy, which the copy's own x-delivery-count
	// starts again from zero after.
	HeaderDeliveries = "x-portalwatch-deliveries"
)

// nodes rotates through the URLs of a cluster's nodes. A connection starts at
// a random node, so that a fleet of processes spreads over the cluster, and
// each attempt starts one node further, so that the node a lost connection
// was on is tried last.
type nodes struct {
	urls []string
	next int
}

// newNodes splits a comma-separated list of AMQP URLs; start picks the first
// node to try (it is taken modulo the list's length). An empty or unparsable
// entry is an error that names its position, never its password.
func newNodes(list string, start int) (*nodes, error) {
	parts := strings.Split(list, ",")
	urls := make([]string, 0, len(parts))
	for i, raw := range parts {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil, fmt.Errorf("AMQP URL list %q: entry %d is empty", redactList(list), i+1)
		}
		if _, err := amqp.ParseURI(raw); err != nil {
			return nil, fmt.Errorf("AMQP URL list: entry %d (%s) is not an AMQP URL: %w", i+1, redact(raw), err)
		}
		urls = append(urls, raw)
	}
	return &nodes{urls: urls, next: start % len(urls)}, nil
}

// order returns the URLs in the order of this attempt and moves the start of
// the next attempt one node on.
func (n *nodes) order() []string {
	out := make([]string, 0, len(n.urls))
	for i := range n.urls {
		out = append(out, n.urls[(n.next+i)%len(n.urls)])
	}
	n.next = (n.next + 1) % len(n.urls)
	return out
}

// connectedTo makes the attempt after this one start at the node after url,
// so that losing the node a connection was on moves it to another at once.
func (n *nodes) connectedTo(url string) {
	for i, u := range n.urls {
		if u == url {
			n.next = (i + 1) % len(n.urls)
			return
		}
	}
}

// dialAny connects to the first node of ns that accepts, trying each once.
// It returns the connection and the URL of its node, or every node's error.
func dialAny(c Config, role string, ns *nodes) (*amqp.Connection, string, error) {
	var errs []error
	for _, url := range ns.order() {
		conn, err := dial(c, role, url)
		if err == nil {
			ns.connectedTo(url)
			return conn, url, nil
		}
		errs = append(errs, err)
	}
	return nil, "", errors.Join(errs...)
}

func dial(c Config, role, url string) (*amqp.Connection, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(c.Name + " " + role)
	conn, err := amqp.DialConfig(url, amqp.Config{
		Heartbeat:  c.Heartbeat,
		Properties: props,
		Locale:     "en_US",
		Dial:       amqp.DefaultDial(5 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to RabbitMQ at %s: %w", redact(url), err)
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

// redactList hides the credentials of every URL of a comma-separated list.
func redactList(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			parts[i] = redact(p)
		}
	}
	return strings.Join(parts, ",")
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
