package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// process is one program pwbench started. It is stopped by its own pid and
// by nothing else.
type process struct {
	name     string // "crawler-1"
	kind     string // "crawler"
	cmd      *exec.Cmd
	logPath  string
	httpAddr string // its /metrics and /healthz address
	done     chan struct{}
	stopping bool // stop was called: its exit is expected
}

// startProgram starts bin with env plus extra, logging to dir/name.log, and
// serving /metrics on a free loopback port.
func startProgram(bin, name, kind, dir string, env []string, extra ...string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(append([]string{}, env...), extra...), "PORTALWATCH_HTTP_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, kind: kind, cmd: cmd, logPath: logPath, httpAddr: addr, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process's pid, waits up to grace for a graceful
// exit, then SIGKILLs that same pid. It returns the exit status.
func (p *process) stop(grace time.Duration) int {
	p.stopping = true
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	return p.cmd.ProcessState.ExitCode()
}

// logTail returns the last n bytes of the process's log.
func (p *process) logTail(n int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
