package testsvc

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A private server is a PostgreSQL, Redis or RabbitMQ instance that one test
// starts for itself, on its own port and data folder, so fault tests can
// restart, kill or flush it without touching the services other tests (or a
// running portalwatch) use. It is stopped and removed when the test ends.
type server struct {
	t       testing.TB
	name    string
	port    int
	dir     string
	start   func() *exec.Cmd // a command that runs the server in the foreground
	stopCmd func() *exec.Cmd // a graceful stop, or nil for SIGTERM
	ready   func() error

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	out    *os.File
}

// Port is the server's TCP port on 127.0.0.1.
func (s *server) Port() int { return s.port }

// Start starts the server and waits until it accepts connections.
func (s *server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	waitErr := s.launch()
	for {
		err := s.ready()
		if err == nil {
			return
		}
		select {
		case <-s.exited:
			// PostgreSQL's backends make themselves group leaders, so
			// after a kill of the postmaster they are out of Kill's and
			// waitDown's reach, and may still hold the shared memory for a
			// moment: a postmaster started meanwhile refuses to run. Such
			// a start is tried again until the deadline.
			if log := tailFile(s.out.Name()); strings.Contains(log, "is still in use") && time.Now().Before(deadline) {
				time.Sleep(250 * time.Millisecond)
				waitErr = s.launch()
				continue
			}
			s.cmd = nil
			s.t.Fatalf("%s exited while starting: %v; log %s:\n%s", s.name, *waitErr, s.out.Name(), tailFile(s.out.Name()))
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready after 90s: %v; log:\n%s", s.name, err, tailFile(s.out.Name()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// launch starts the server's process in a process group of its own and
// returns where its exit error will be, once s.exited is closed.
func (s *server) launch() *error {
	cmd := s.start()
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // so Kill reaches every process of it
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.name, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	waitErr := new(error)
	go func(exited chan struct{}) { *waitErr = cmd.Wait(); close(exited) }(s.exited)
	return waitErr
}

// Stop stops the server gracefully and waits until its port is closed.
func (s *server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if s.stopCmd != nil {
		if out, err := s.stopCmd().CombinedOutput(); err != nil {
			s.t.Logf("stop %s: %v: %s", s.name, err, out)
		}
	} else {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	}
	s.waitDown(60 * time.Second)
}

// Kill kills every process of the server with SIGKILL, as a crash would.
func (s *server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.waitDown(30 * time.Second)
}

// Restart stops the server gracefully and starts it again.
func (s *server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// waitDown waits until the server's port is closed and every process of its
// group has exited. PostgreSQL's backends are not in it (each makes itself a
// group leader) and may outlive a killed postmaster for a moment, holding its
// shared memory ("pre-existing shared memory block is still in use"): Start
// tries again when that is why a start failed.
func (s *server) waitDown(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for portOpen(s.port) || !closed(s.exited) || groupAlive(s.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			s.t.Logf("%s did not stop within %s; killed", s.name, timeout)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.cmd = nil
}

// groupAlive reports whether a process of group pgid is still running. A
// zombie does not count: it holds no resources, and this machine's init may
// be slow to reap it.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the command, which may hold spaces: state ppid pgrp …
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg == pgid {
			return true
		}
	}
	return false
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// freePort returns a loopback port that nothing listens on now, outside the
// ephemeral range so a client's outgoing connection cannot take it between
// our check and the server's bind.
func freePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if portOpen(port) || portOpen(port+1) {
			continue
		}
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port found")
	return 0
}

func newServer(t testing.TB, name string) *server {
	t.Helper()
	dir, err := os.MkdirTemp("", "portalwatch-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, name: name, port: freePort(t), dir: dir, out: out}
	t.Cleanup(func() {
		s.Kill()
		out.Close()
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("%s files kept in %s", name, dir)
		}
	})
	return s
}

func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func isRoot() bool { return os.Geteuid() == 0 }

// runAs makes cmd run as the named system user when the test runs as root:
// PostgreSQL refuses root, and RabbitMQ's files belong to its user. The
// process is started directly (no su, which would put it in a session of its
// own, out of reach of Kill).
func runAs(t testing.TB, cmd *exec.Cmd, username string) *exec.Cmd {
	t.Helper()
	if !isRoot() {
		return cmd
	}
	u, err := user.Lookup(username)
	if err != nil {
		t.Fatalf("user %s: %v", username, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	cmd.Env = append(cmd.Environ(), "HOME="+u.HomeDir, "USER="+username, "LOGNAME="+username)
	return cmd
}

// chownTo gives dir to the named system user when running as root, since the
// server refuses to run as root or drops privileges to that user.
func chownTo(t testing.TB, dir, username string) {
	t.Helper()
	if !isRoot() {
		return
	}
	u, err := user.Lookup(username)
	if err != nil {
		t.Fatalf("user %s: %v", username, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, gid) })
}

func need(t testing.TB, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(p, "/") {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		} else if found, err := exec.LookPath(p); err == nil {
			return found
		}
	}
	Unavailable(t, "%s not installed", paths[0])
	return ""
}

// PrivateRedis is a Redis server of the test's own.
type PrivateRedis struct{ *server }

// URL is the server's Redis URL.
func (r *PrivateRedis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// StartRedis starts a Redis server for the test alone, without persistence:
// a restart loses everything, as the design assumes.
func StartRedis(t testing.TB) *PrivateRedis {
	t.Helper()
	bin := need(t, "redis-server")
	s := newServer(t, "redis")
	s.start = func() *exec.Cmd {
		return exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--save", "",
			"--appendonly", "no", "--dir", s.dir, "--daemonize", "no")
	}
	s.ready = func() error { return redisPing(s.port) }
	s.Start()
	return &PrivateRedis{s}
}

func redisPing(port int) error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// PrivateRabbitMQ is a RabbitMQ node of the test's own.
type PrivateRabbitMQ struct {
	*server
	node string
}

// URL is the node's AMQP URL.
func (r *PrivateRabbitMQ) URL() string {
	return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", r.port)
}

// Ctl runs rabbitmqctl against the node.
func (r *PrivateRabbitMQ) Ctl(args ...string) (string, error) {
	out, err := exec.Command("rabbitmqctl", append([]string{"-n", r.node}, args...)...).CombinedOutput()
	return string(out), err
}

// StartRabbitMQ starts a RabbitMQ node for the test alone (about 6 s on two
// cores), with its own port, distribution port, data and logs.
func StartRabbitMQ(t testing.TB) *PrivateRabbitMQ {
	t.Helper()
	r := newRabbitMQ(t, "pwtest"+ID(t)+"@localhost")
	r.Start()
	return r
}

// newRabbitMQ prepares, without starting, a RabbitMQ node named node.
func newRabbitMQ(t testing.TB, node string) *PrivateRabbitMQ {
	t.Helper()
	// The inner script, not /usr/sbin's wrapper, which would su into a
	// session of its own.
	bin := need(t, "/usr/lib/rabbitmq/bin/rabbitmq-server", "rabbitmq-server")
	s := newServer(t, "rabbitmq")
	distPort := s.port + 1
	if err := os.WriteFile(filepath.Join(s.dir, "rabbitmq.conf"),
		fmt.Appendf(nil, "listeners.tcp.local = 127.0.0.1:%d\nloopback_users = none\n", s.port), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mnesia", "log"} {
		os.MkdirAll(filepath.Join(s.dir, d), 0o755)
	}
	chownTo(t, s.dir, "rabbitmq")
	env := append(os.Environ(),
		"RABBITMQ_NODENAME="+node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(s.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(distPort),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(s.dir, "rabbitmq"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(s.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(s.dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(s.dir, "enabled_plugins"),
		"RABBITMQ_FEATURE_FLAGS_FILE="+filepath.Join(s.dir, "feature_flags"),
	)
	s.start = func() *exec.Cmd {
		cmd := exec.Command(bin)
		cmd.Env = env
		cmd.Dir = s.dir
		return runAs(t, cmd, "rabbitmq")
	}
	s.stopCmd = func() *exec.Cmd { return exec.Command("rabbitmqctl", "-n", node, "stop") }
	s.ready = func() error {
		if !portOpen(s.port) {
			return fmt.Errorf("port %d closed", s.port)
		}
		return nil
	}
	return &PrivateRabbitMQ{server: s, node: node}
}

// PrivatePostgres is a PostgreSQL server of the test's own.
type PrivatePostgres struct{ *server }

// AdminURL is a URL for the postgres superuser's database on the server.
func (p *PrivatePostgres) AdminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// StartPostgres initialises and starts a PostgreSQL cluster for the test
// alone (trust auth on loopback, fsync off: a crash of the server process
// still exercises recovery, only the machine's crash does not).
func StartPostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	binDir := ""
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		binDir = filepath.Dir(matches[len(matches)-1])
	} else if p, err := exec.LookPath("initdb"); err == nil {
		binDir = filepath.Dir(p)
	} else {
		Unavailable(t, "PostgreSQL server binaries (initdb) not installed")
	}
	s := newServer(t, "postgres")
	data := filepath.Join(s.dir, "data")
	asOwner := func(name string, args ...string) *exec.Cmd {
		return runAs(t, exec.Command(name, args...), "postgres")
	}
	chownTo(t, s.dir, "postgres")
	if out, err := asOwner(filepath.Join(binDir, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.start = func() *exec.Cmd {
		return asOwner(filepath.Join(binDir, "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir, "-c", "fsync=off",
			"-c", "max_connections=200")
	}
	s.stopCmd = func() *exec.Cmd {
		return asOwner(filepath.Join(binDir, "pg_ctl"), "-D", data, "stop", "-m", "fast", "-w")
	}
	s.ready = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, "pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	s.Start()
	return &PrivatePostgres{s}
}
