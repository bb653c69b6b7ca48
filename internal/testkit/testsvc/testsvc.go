// Package testsvc gives tests their own slice of the real services on
// loopback: a fresh PostgreSQL database, unique RabbitMQ queue names and a
// unique Redis key prefix, each removed when the test ends. A service that is
// not reachable skips the test, or fails it when CI=true, so CI can never pass
// by skipping.
package testsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/redisconn"
)

// Environment variables that point tests at other servers.
const (
	envPostgresAdmin = "PORTALWATCH_TEST_POSTGRES" // a URL whose user may CREATE DATABASE
	envAMQP          = "PORTALWATCH_TEST_AMQP"
	envRedis         = "PORTALWATCH_TEST_REDIS"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// PostgresAdminURL is the server tests create their databases on.
func PostgresAdminURL() string {
	return env(envPostgresAdmin, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
}

// AMQPURL is the broker tests use.
func AMQPURL() string { return env(envAMQP, "amqp://guest:guest@127.0.0.1:5672/") }

// RedisURL is the Redis server tests use.
func RedisURL() string { return env(envRedis, "redis://127.0.0.1:6379/0") }

// Unavailable skips the test because a service is missing, or fails it when
// CI=true: in CI every service the tests need must be running.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a missing service fails the run; start it with scripts/services.sh ensure)", msg)
	}
	t.Skipf("%s; start it with scripts/services.sh ensure", msg)
}

// ID returns a short random name part, unique per call.
func ID(t testing.TB) string {
	t.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// Postgres creates an empty database for the test and returns its URL. The
// database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, PostgresAdminURL())
	if err != nil {
		Unavailable(t, "PostgreSQL at %s: %v", redact(PostgresAdminURL()), err)
	}
	defer admin.Close(context.Background())
	name := "pwtest_" + ID(t)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, PostgresAdminURL())
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Queues returns a job queue and a task queue name unique to the test. Both
// are deleted, with their dead-letter queues, when the test ends.
func Queues(t testing.TB) (jobQueue, taskQueue string) {
	t.Helper()
	conn, err := amqp.Dial(AMQPURL())
	if err != nil {
		Unavailable(t, "RabbitMQ at %s: %v", redact(AMQPURL()), err)
	}
	conn.Close()
	id := ID(t)
	jobQueue, taskQueue = "pwtest_"+id+"_job_queue", "pwtest_"+id+"_task_queue"
	t.Cleanup(func() { DeleteQueues(t, jobQueue, jobQueue+".dlq", taskQueue, taskQueue+".dlq") })
	return jobQueue, taskQueue
}

// DeleteQueues deletes the named queues, ignoring ones that do not exist.
func DeleteQueues(t testing.TB, names ...string) { DeleteQueuesAt(t, AMQPURL(), names...) }

// DeleteQueuesAt deletes the named queues on the broker at amqpURL,
// logging (not failing on) what it could not delete: clean-up must not hide
// the test's own verdict.
func DeleteQueuesAt(t testing.TB, amqpURL string, names ...string) {
	t.Helper()
	if err := DropQueues(amqpURL, names...); err != nil {
		t.Logf("%v", err)
	}
}

// DropQueues deletes the named queues on the broker at amqpURL; a queue that
// does not exist is not an error. It carries on past a queue it cannot
// delete and returns every failure joined. Tests call DeleteQueuesAt;
// harnesses without a testing.TB (the benchmarks) call this.
func DropQueues(amqpURL string, names ...string) error {
	// AMQP_URL may list a cluster's nodes: any live one deletes for all.
	var conn *amqp.Connection
	var err error
	for _, node := range strings.Split(amqpURL, ",") {
		if conn, err = amqp.Dial(strings.TrimSpace(node)); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("delete queues %s: %w", strings.Join(names, ", "), err)
	}
	defer conn.Close()
	var errs []error
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("delete queue %s: %w", name, err))...)
		}
		// A failed delete closes the channel, hence one channel per queue.
		if _, err := ch.QueueDelete(name, false, false, false); err != nil && !strings.Contains(err.Error(), "NOT_FOUND") {
			errs = append(errs, fmt.Errorf("delete queue %s: %w", name, err))
		}
		ch.Close()
	}
	return errors.Join(errs...)
}

// Redis returns a key prefix unique to the test. Every key under it is
// deleted when the test ends.
func Redis(t testing.TB) (redisURL, prefix string) {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		Unavailable(t, "Redis at %s: %v", RedisURL(), err)
	}
	rdb.Close()
	prefix = "pwtest:" + ID(t)
	t.Cleanup(func() { DeleteKeysAt(t, RedisURL(), prefix) })
	return RedisURL(), prefix
}

// DeleteKeysAt deletes every key under prefix on the Redis at redisURL,
// logging (not failing on) an error, within 30 s.
func DeleteKeysAt(t testing.TB, redisURL, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := DropKeys(ctx, redisURL, prefix); err != nil {
		t.Logf("%v", err)
	}
}

// DropKeys deletes every key that starts with prefix + ":" on the Redis at
// redisURL (any REDIS_URL form; on a cluster, on every master), UNLINKing
// them 1,000 at a time as the scan finds them, so a benchmark's million keys
// neither sit in memory nor block Redis.
func DropKeys(ctx context.Context, redisURL, prefix string) error {
	rdb, err := redisconn.Open(redisURL, 5*time.Second)
	if err != nil {
		return fmt.Errorf("clean Redis prefix %s: %w", prefix, err)
	}
	defer rdb.Close()
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return dropKeysOn(ctx, node, prefix)
		})
	} else {
		err = dropKeysOn(ctx, rdb, prefix)
	}
	if err != nil {
		return fmt.Errorf("clean Redis prefix %s: %w", prefix, err)
	}
	return nil
}

// dropKeysOn scans one server. Each key is UNLINKed alone, in a pipeline:
// a cluster node refuses one UNLINK of keys in different slots.
func dropKeysOn(ctx context.Context, rdb redis.Cmdable, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+":*", 5000).Iterator()
	batch := make([]string, 0, 1000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.Unlink(ctx, k)
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// Logger returns a logger that writes through t.Log, so a test's output shows
// what the code under test logged.
// Lines logged after the test ended are dropped: testing panics on them.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
