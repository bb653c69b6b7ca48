// Package systest runs whole portalwatch deployments for end-to-end and
// fault-injection tests: the real programs, built once, as processes, with a
// database, queue names and Redis prefix of their own, against the shared
// services or private ones that the test may restart.
package systest

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/testsvc"
)

// Programs are the binaries Build makes.
var Programs = []string{"scheduler", "crawler", "processor", "watchctl", "web"}

// Build builds the programs into a new folder and returns it. race adds the
// race detector. Call it from TestMain; remove the folder afterwards.
func Build(race bool) (string, error) {
	dir, err := os.MkdirTemp("", "portalwatch-bin-")
	if err != nil {
		return "", err
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	args := []string{"build", "-o", dir + "/"}
	if race {
		args = append(args, "-race")
	}
	for _, p := range Programs {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
}

// Services says where a system's PostgreSQL, RabbitMQ and Redis are.
type Services struct {
	PostgresAdminURL string // a URL whose user may create databases
	AMQPURL          string
	RedisURL         string
}

// Shared returns the shared services on loopback.
func Shared() Services {
	return Services{PostgresAdminURL: testsvc.PostgresAdminURL(), AMQPURL: testsvc.AMQPURL(), RedisURL: testsvc.RedisURL()}
}

// System is one isolated portalwatch deployment.
type System struct {
	t        testing.TB
	binDir   string
	Env      []string
	DBURL    string
	JobQueue string
	TaskQ    string
	Prefix   string
	DB       *pgxpool.Pool

	mu    sync.Mutex
	procs []*Process
}

// New creates a database on svc's PostgreSQL, names queues and a Redis
// prefix for the system, and migrates the database. Everything is removed
// when the test ends; programs still running are stopped first.
func New(t testing.TB, binDir string, svc Services, extraEnv ...string) *System {
	t.Helper()
	id := testsvc.ID(t)
	dbName := "pwsys_" + id
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, svc.PostgresAdminURL)
	if err != nil {
		testsvc.Unavailable(t, "PostgreSQL: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		t.Fatalf("create database: %v", err)
	}
	admin.Close(ctx)
	u, err := url.Parse(svc.PostgresAdminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + dbName
	dbURL := u.String()
	s := &System{
		t: t, binDir: binDir, DBURL: dbURL,
		JobQueue: "pwsys_" + id + "_job_queue", TaskQ: "pwsys_" + id + "_task_queue", Prefix: "pwsys:" + id,
	}
	s.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"AMQP_URL=" + svc.AMQPURL,
		"REDIS_URL=" + svc.RedisURL,
		"PORTALWATCH_JOB_QUEUE=" + s.JobQueue,
		"PORTALWATCH_TASK_QUEUE=" + s.TaskQ,
		"PORTALWATCH_REDIS_PREFIX=" + s.Prefix,
		"PORTALWATCH_ALLOW_PRIVATE=true",
		"PORTALWATCH_HTTP_ADDR=off",
		"PORTALWATCH_SCHEDULER_POLL=100ms",
		"PORTALWATCH_SHUTDOWN_TIMEOUT=5s",
	}, extraEnv...)
	t.Cleanup(func() {
		s.StopAll()
		if s.DB != nil {
			s.DB.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if admin, err := pgx.Connect(ctx, svc.PostgresAdminURL); err == nil {
			admin.Exec(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
			admin.Close(ctx)
		}
		testsvc.DeleteQueuesAt(t, svc.AMQPURL, s.JobQueue, s.JobQueue+".dlq", s.TaskQ, s.TaskQ+".dlq")
		testsvc.DeleteKeysAt(t, svc.RedisURL, s.Prefix)
	})
	if out, err := s.Watchctl("migrate"); err != nil {
		t.Fatalf("watchctl migrate: %v\n%s", err, out)
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	s.DB = pool
	return s
}

// Watchctl runs the real CLI with the system's environment.
func (s *System) Watchctl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.binDir, "watchctl"), args...)
	cmd.Env = s.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Process is one running program.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the exit status once Done is closed; -1 for a signal.
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Output is what the process has logged so far.
func (p *Process) Output() string { return p.out.String() }

// Kill sends SIGKILL and waits for the process to die.
func (p *Process) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Start starts one program with the system's environment plus extraEnv.
func (s *System) Start(program string, extraEnv ...string) *Process {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.binDir, program))
	cmd.Env = append(append([]string{}, s.Env...), extraEnv...)
	p := &Process{Name: program, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
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

// StopAll sends SIGTERM to every program still running and waits for each.
// A program that does not exit within 30 s, or exits with a status other than
// 0, fails the test; if the test failed, the programs' last lines are shown.
func (s *System) StopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		killed := false
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			s.t.Errorf("%s (pid %d) did not stop within 30s of SIGTERM", p.Name, p.Pid())
			p.Kill()
			killed = true
		}
		if code := p.ExitCode(); code != 0 && code != -1 && !killed {
			s.t.Errorf("%s (pid %d) exited with status %d after SIGTERM, want 0", p.Name, p.Pid(), code)
		}
		if s.t.Failed() {
			s.t.Logf("--- %s (pid %d) last output:\n%s", p.Name, p.Pid(), Tail(p.Output(), 40))
		}
	}
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep memory bounded on long runs: the last 4 MiB are plenty to debug.
	if b.b.Len() > 8<<20 {
		rest := append([]byte(nil), b.b.Bytes()[b.b.Len()-4<<20:]...)
		b.b.Reset()
		b.b.Write(rest)
	}
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
