// Package e2e runs the real portalwatch programs as processes against the
// real PostgreSQL, RabbitMQ and Redis, each test with its own database, queue
// names and key prefix, and checks what users see in the updates table.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/testsvc"
)

// binDir holds the programs built once for the whole package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "portalwatch-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-race", "-o", dir+"/",
		"../cmd/scheduler", "../cmd/crawler", "../cmd/processor", "../cmd/watchctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build programs:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// system is one isolated portalwatch deployment: its own database, queues and
// Redis prefix, and the processes started for it.
type system struct {
	t     *testing.T
	env   []string
	db    *pgxpool.Pool
	mu    sync.Mutex
	procs []*process
}

type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func newSystem(t *testing.T, extraEnv ...string) *system {
	t.Helper()
	dbURL := testsvc.Postgres(t)
	jobQ, taskQ := testsvc.Queues(t)
	redisURL, prefix := testsvc.Redis(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"AMQP_URL=" + testsvc.AMQPURL(),
		"REDIS_URL=" + redisURL,
		"PORTALWATCH_JOB_QUEUE=" + jobQ,
		"PORTALWATCH_TASK_QUEUE=" + taskQ,
		"PORTALWATCH_REDIS_PREFIX=" + prefix,
		"PORTALWATCH_ALLOW_PRIVATE=true",
		"PORTALWATCH_HTTP_ADDR=off",
		"PORTALWATCH_SCHEDULER_POLL=100ms",
		"PORTALWATCH_LOG_LEVEL=debug",
		"PORTALWATCH_SHUTDOWN_TIMEOUT=5s",
	}
	s := &system{t: t, env: append(env, extraEnv...)}
	if out, err := s.watchctl("migrate"); err != nil {
		t.Fatalf("watchctl migrate: %v\n%s", err, out)
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	s.db = pool
	t.Cleanup(func() {
		s.stopAll()
		pool.Close()
	})
	return s
}

// watchctl runs the real CLI and returns its combined output.
func (s *system) watchctl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "watchctl"), args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start starts one program; its output is kept and shown if the test fails.
func (s *system) start(program string) *process {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, program))
	cmd.Env = s.env
	p := &process{name: program, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", program, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p
}

// stopAll sends SIGTERM to every running program, waits for them and, if the
// test failed, shows what they logged.
func (s *system) stopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			s.t.Errorf("%s (pid %d) did not stop within 30s of SIGTERM", p.name, p.cmd.Process.Pid)
			p.cmd.Process.Kill()
			<-p.done
		}
		if code := p.cmd.ProcessState.ExitCode(); code != 0 && !s.t.Failed() {
			s.t.Errorf("%s exited with status %d after SIGTERM, want 0", p.name, code)
		}
		if s.t.Failed() {
			s.t.Logf("--- %s (pid %d) output:\n%s", p.name, p.cmd.Process.Pid, tail(p.out.String(), 60))
		}
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// waitFor polls cond until it holds or the timeout passes.
func (s *system) waitFor(what string, timeout time.Duration, cond func() (bool, error)) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			s.t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNow makes a page due at once, so tests need not wait an interval.
func (s *system) checkNow(pageID int64) {
	s.t.Helper()
	if _, err := s.db.Exec(context.Background(), `UPDATE pages SET next_check_at = now() WHERE id = $1`, pageID); err != nil {
		s.t.Fatal(err)
	}
}

// checks returns when the page was last checked and its consecutive failures.
func (s *system) lastChecked(pageID int64) (time.Time, error) {
	var t *time.Time
	err := s.db.QueryRow(context.Background(), `SELECT last_checked_at FROM pages WHERE id = $1`, pageID).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, err
	}
	return *t, nil
}

// waitForCheck forces a check of the page and waits until one that started
// after now is recorded.
func (s *system) waitForCheck(pageID int64) {
	s.t.Helper()
	before := time.Now()
	s.checkNow(pageID)
	s.waitFor(fmt.Sprintf("a new check of page %d", pageID), 60*time.Second, func() (bool, error) {
		t, err := s.lastChecked(pageID)
		return !t.IsZero() && t.After(before), err
	})
}

type update struct {
	PageID int64
	URL    string
	Text   string
}

func (s *system) updates() []update {
	s.t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT page_id, url, text FROM updates ORDER BY id`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var us []update
	for rows.Next() {
		var u update
		if err := rows.Scan(&u.PageID, &u.URL, &u.Text); err != nil {
			s.t.Fatal(err)
		}
		us = append(us, u)
	}
	return us
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
