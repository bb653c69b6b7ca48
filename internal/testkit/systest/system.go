// Package systest runs whole portalwatch deployments for end-to-end and
// fault-injection tests: the real programs, built once, as processes, with a
// database, queue names and Redis prefix of their own, against the shared
// services or private ones that the test may restart.
package systest

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// Programs are the binaries Build makes.
var Programs = []string{"scheduler", "crawler", "processor", "extractor", "notifier", "watchctl", "web", "renderer"}

// ModuleRoot is the folder of portalwatch's go.mod, found from this
// source file, so tests build from the tree they run in wherever go test
// was started.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Build builds the programs from ModuleRoot into a new folder and returns
// it. race adds the race detector. Call it from TestMain; remove the folder
// afterwards.
func Build(race bool) (string, error) { return BuildAt(context.Background(), ModuleRoot(), race) }

// Main is the TestMain of a package whose tests run the programs: it
// builds them once (race adds the race detector) into a folder it stores in
// *binDir for systest.New, runs the tests, removes the folder and exits
// with the tests' status; a failed build exits 1 with go's output.
func Main(m *testing.M, race bool, binDir *string) {
	dir, err := Build(race)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the programs:", err)
		os.Exit(1)
	}
	*binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// BuildAt builds Programs from the module at root into a new folder and
// returns it; the caller removes it. A build error carries go's output.
func BuildAt(ctx context.Context, root string, race bool) (string, error) {
	dir, err := os.MkdirTemp("", "portalwatch-bin-")
	if err != nil {
		return "", fmt.Errorf("build the programs: %w", err)
	}
	args := []string{"build", "-o", dir + "/"}
	if race {
		args = append(args, "-race")
	}
	for _, p := range Programs {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build in %s: %v\n%s", root, err, out)
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

// Sandbox is one deployment's slice of the services: a database, a job and
// a task queue name and a Redis key prefix, all spelled <kind>_<id>, so
// that runs side by side on the shared servers never meet. Tests get theirs
// through New; the benchmarks, which have no testing.TB, use NewSandbox and
// Close directly.
type Sandbox struct {
	Services Services
	ID       string
	DBName   string
	DBURL    string // DBName on Services.PostgresAdminURL's server
	JobQueue string
	TaskQ    string
	Prefix   string // Redis keys are Prefix + ":..."
	// RenderQ is the render queue, from the scheduler to the renderers.
	RenderQ string
	// DataDir is the programs' PORTALWATCH_DATA_DIR (the archive is in
	// it), a directory of the sandbox's own that Close removes.
	DataDir string
}

// NewSandbox creates an empty database named kind_id (migrate it with
// Migrate) and names the queues and prefix after it. kind and id must be
// lower-case letters, digits and underscores: they become SQL identifiers.
func NewSandbox(ctx context.Context, svc Services, kind, id string) (*Sandbox, error) {
	name := kind + "_" + id
	u, err := url.Parse(svc.PostgresAdminURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL admin URL: %w", err)
	}
	admin, err := pgx.Connect(ctx, svc.PostgresAdminURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w", u.Redacted(), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	dataDir, err := os.MkdirTemp("", "portalwatch-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("data directory of %s: %w", name, err)
	}
	return &Sandbox{
		Services: svc, ID: id, DBName: name, DBURL: u.String(),
		JobQueue: name + "_job_queue", TaskQ: name + "_task_queue", RenderQ: name + "_render_queue", Prefix: kind + ":" + id, DataDir: dataDir,
	}, nil
}

// Env is the programs' environment for the sandbox: where the services
// are, its names, and private addresses allowed (every farm is on
// loopback).
func (s *Sandbox) Env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"DATABASE_URL=" + s.DBURL,
		"AMQP_URL=" + s.Services.AMQPURL,
		"REDIS_URL=" + s.Services.RedisURL,
		"PORTALWATCH_JOB_QUEUE=" + s.JobQueue,
		"PORTALWATCH_TASK_QUEUE=" + s.TaskQ,
		"PORTALWATCH_RENDER_QUEUE=" + s.RenderQ,
		"PORTALWATCH_REDIS_PREFIX=" + s.Prefix,
		"PORTALWATCH_ALLOW_PRIVATE=true",
		"PORTALWATCH_DATA_DIR=" + s.DataDir,
		// Tests and benchmarks serve every page from one or a few loopback
		// origins; the per-origin spacing and in-flight cap a real fleet owes
		// a host would make that one fetch a second. Tests of politeness set
		// them back.
		"PORTALWATCH_HOST_SPACING=0",
		"PORTALWATCH_HOST_MAX_INFLIGHT=0",
	}
}

// Migrate applies the migrations with the real CLI of binDir, as an
// operator would.
func (s *Sandbox) Migrate(ctx context.Context, binDir string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "watchctl"), "migrate")
	cmd.Env = s.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("watchctl migrate: %w\n%s", err, out)
	}
	return nil
}

// Close drops the database (even with connections still open), deletes the
// queues with their dead-letter queues and every key under the prefix. It
// carries on past what it cannot remove and returns every failure joined.
func (s *Sandbox) Close(ctx context.Context) error {
	var errs []error
	if admin, err := pgx.Connect(ctx, s.Services.PostgresAdminURL); err != nil {
		errs = append(errs, fmt.Errorf("drop database %s: %w", s.DBName, err))
	} else {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.DBName+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", s.DBName, err))
		}
		admin.Close(context.WithoutCancel(ctx))
	}
	errs = append(errs, testsvc.DropQueues(s.Services.AMQPURL, s.JobQueue, s.JobQueue+".dlq", s.TaskQ, s.TaskQ+".dlq", s.RenderQ, s.RenderQ+".dlq"))
	errs = append(errs, testsvc.DropKeys(ctx, s.Services.RedisURL, s.Prefix))
	if s.DataDir != "" {
		errs = append(errs, os.RemoveAll(s.DataDir))
	}
	return errors.Join(errs...)
}

// System is one isolated portalwatch deployment.
type System struct {
	*Sandbox
	t      testing.TB
	binDir string
	// Env is what every program started gets: the sandbox's environment
	// (it hides Sandbox.Env) with the tests' settings (no HTTP listener,
	// a 100 ms scheduler poll, a 5 s shutdown) and New's extraEnv.
	Env []string
	// DB is a pool on the system's database, for the test's own queries.
	DB *pgxpool.Pool

	mu    sync.Mutex
	procs []*Process
}

// New creates a sandbox on svc for the test (see Sandbox) and migrates its
// database. Everything is removed when the test ends; programs still
// running are stopped first.
func New(t testing.TB, binDir string, svc Services, extraEnv ...string) *System {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := NewSandbox(ctx, svc, "pwsys", testsvc.ID(t))
	if err != nil {
		testsvc.Unavailable(t, "%v", err)
	}
	s := &System{Sandbox: sb, t: t, binDir: binDir}
	s.Env = append(append(sb.Env(),
		"PORTALWATCH_HTTP_ADDR=off",
		"PORTALWATCH_SCHEDULER_POLL=100ms",
		"PORTALWATCH_SHUTDOWN_TIMEOUT=5s",
	), extraEnv...)
	t.Cleanup(func() {
		s.StopAll()
		if s.DB != nil {
			s.DB.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			t.Logf("remove the test's sandbox: %v", err)
		}
	})
	if out, err := s.Watchctl("migrate"); err != nil {
		t.Fatalf("watchctl migrate: %v\n%s", err, out)
	}
	pool, err := pgxpool.New(context.Background(), sb.DBURL)
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

// Process is one running program, started by StartProcess. It is signalled
// by its own pid and by nothing else.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// StartProcess starts the program at path with exactly env, keeping its
// output (the last 4 MiB at least) for Output.
func StartProcess(path, name string, env []string) (*Process, error) {
	cmd := exec.Command(path)
	cmd.Env = env
	p := &Process{Name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the exit status once Done is closed; -1 for a signal.
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Output is what the process has logged so far.
func (p *Process) Output() string { return p.out.String() }

// Kill sends SIGKILL and waits for the process to die.
func (p *Process) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, waits up to grace for the process to exit and
// SIGKILLs it after that. It returns the exit status (-1 for a signal) and
// whether it had to kill.
func (p *Process) Stop(grace time.Duration) (code int, killed bool) {
	if !p.Exited() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			p.Kill()
			killed = true
		}
	}
	return p.ExitCode(), killed
}

// Start starts one program with the system's environment plus extraEnv.
func (s *System) Start(program string, extraEnv ...string) *Process {
	s.t.Helper()
	p, err := StartProcess(filepath.Join(s.binDir, program), program, append(append([]string{}, s.Env...), extraEnv...))
	if err != nil {
		s.t.Fatal(err)
	}
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
