package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// services says where the real servers are. Every URL must point at
// loopback: pwbench sends load, and load goes nowhere else.
type services struct {
	postgresAdmin string // a URL whose user may CREATE DATABASE (trust auth on loopback)
	amqp          string
	redis         string
}

func (s *services) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.postgresAdmin, "postgres", envOr("PWBENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL admin URL; each run creates and drops its own database there")
	fs.StringVar(&s.amqp, "amqp", envOr("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ URL")
	fs.StringVar(&s.redis, "redis", envOr("REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL")
}

// checkLoopback refuses any service URL that is not on loopback.
func (s *services) checkLoopback() error {
	for _, raw := range []string{s.postgresAdmin, s.amqp, s.redis} {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("service URL: %w", err)
		}
		if h := u.Hostname(); h != "localhost" && !strings.HasPrefix(h, "127.") && h != "::1" {
			return fmt.Errorf("service %s is not on loopback: pwbench only loads this machine", u.Redacted())
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// sandbox is one run's slice of the services: a database, two queue names
// and a Redis key prefix, all named pwbench_<id>, removed by Close.
type sandbox struct {
	svc       services
	id        string
	dbName    string
	dbURL     string
	jobQueue  string
	taskQueue string
	prefix    string
	log       io.Writer
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newSandbox creates the run's database (empty; migrate it with watchctl).
func newSandbox(ctx context.Context, svc services, log io.Writer) (*sandbox, error) {
	if err := svc.checkLoopback(); err != nil {
		return nil, err
	}
	id := newID()
	s := &sandbox{
		svc: svc, id: id, log: log,
		dbName:    "pwbench_" + id,
		jobQueue:  "pwbench_" + id + "_job_queue",
		taskQueue: "pwbench_" + id + "_task_queue",
		prefix:    "pwbench:" + id,
	}
	admin, err := pgx.Connect(ctx, svc.postgresAdmin)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL admin connection: %w", err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+s.dbName); err != nil {
		return nil, fmt.Errorf("create database %s: %w", s.dbName, err)
	}
	u, _ := url.Parse(svc.postgresAdmin)
	u.Path = "/" + s.dbName
	s.dbURL = u.String()
	fmt.Fprintf(log, "sandbox %s: database %s, queues %s/%s, Redis prefix %s\n", id, s.dbName, s.jobQueue, s.taskQueue, s.prefix)
	return s, nil
}

// env returns the programs' environment for this sandbox.
func (s *sandbox) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"DATABASE_URL=" + s.dbURL,
		"AMQP_URL=" + s.svc.amqp,
		"REDIS_URL=" + s.svc.redis,
		"PORTALWATCH_JOB_QUEUE=" + s.jobQueue,
		"PORTALWATCH_TASK_QUEUE=" + s.taskQueue,
		"PORTALWATCH_REDIS_PREFIX=" + s.prefix,
		"PORTALWATCH_ALLOW_PRIVATE=true",
	}
}

// pool opens a connection pool on the run's database.
func (s *sandbox) pool(ctx context.Context) (*pgxpool.Pool, error) {
	p, err := pgxpool.New(ctx, s.dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.dbName, err)
	}
	return p, nil
}

// Close drops the database, deletes the queues (and their dead-letter
// queues) and every Redis key under the prefix. It reports what it could
// not remove and carries on.
func (s *sandbox) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if admin, err := pgx.Connect(ctx, s.svc.postgresAdmin); err != nil {
		fmt.Fprintf(s.log, "cleanup: %v\n", err)
	} else {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.dbName+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(s.log, "cleanup: drop %s: %v\n", s.dbName, err)
		}
		admin.Close(ctx)
	}
	deleteQueues(s.svc.amqp, s.log, s.jobQueue, s.jobQueue+".dlq", s.taskQueue, s.taskQueue+".dlq")
	if err := deleteRedisPrefix(ctx, s.svc.redis, s.prefix); err != nil {
		fmt.Fprintf(s.log, "cleanup: Redis prefix %s: %v\n", s.prefix, err)
	}
	fmt.Fprintf(s.log, "sandbox %s removed\n", s.id)
}

// deleteQueues deletes the named queues; a missing queue is not an error.
func deleteQueues(amqpURL string, log io.Writer, names ...string) {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		fmt.Fprintf(log, "cleanup: RabbitMQ: %v\n", err)
		return
	}
	defer conn.Close()
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			fmt.Fprintf(log, "cleanup: RabbitMQ channel: %v\n", err)
			return
		}
		if _, err := ch.QueueDelete(name, false, false, false); err != nil && !strings.Contains(err.Error(), "NOT_FOUND") {
			fmt.Fprintf(log, "cleanup: delete queue %s: %v\n", name, err)
		}
		ch.Close()
	}
}

// deleteRedisPrefix deletes every key that starts with prefix + ":".
func deleteRedisPrefix(ctx context.Context, redisURL, prefix string) error {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	iter := rdb.Scan(ctx, 0, prefix+":*", 5000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := rdb.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return rdb.Unlink(ctx, batch...).Err()
	}
	return nil
}

// programs is a temporary directory holding freshly built portalwatch
// programs: go build ./cmd/scheduler ./cmd/crawler ./cmd/processor ./cmd/watchctl.
type programs struct{ dir string }

func buildPrograms(ctx context.Context, repo string, log io.Writer) (*programs, error) {
	dir, err := os.MkdirTemp("", "pwbench-bin-")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/",
		"./cmd/scheduler", "./cmd/crawler", "./cmd/processor", "./cmd/watchctl")
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build the programs: %w", err)
	}
	fmt.Fprintf(log, "built scheduler, crawler, processor, watchctl in %.1fs\n", time.Since(start).Seconds())
	return &programs{dir: dir}, nil
}

func (p *programs) path(name string) string { return filepath.Join(p.dir, name) }

func (p *programs) Close() { os.RemoveAll(p.dir) }

// migrate applies the migrations with the real CLI, as an operator would.
func (p *programs) migrate(ctx context.Context, sb *sandbox) error {
	cmd := exec.CommandContext(ctx, p.path("watchctl"), "migrate")
	cmd.Env = sb.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("watchctl migrate: %w\n%s", err, out)
	}
	return nil
}
