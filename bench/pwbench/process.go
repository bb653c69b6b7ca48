package pwbench

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
)

// process is one program pwbench started, with what the benchmark reads of
// it. It is stopped by its own pid and by nothing else.
type process struct {
	*systest.Process
	kind     string // "crawler"
	httpAddr string // its /metrics and /healthz address
	stopping bool   // stop was called: its exit is expected
}

// startProgram starts bin as name with env plus extra, serving /metrics on
// a free loopback port.
func startProgram(bin, name, kind string, env []string, extra ...string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := systest.StartProcess(bin, name, append(append(append([]string{}, env...), extra...), "PORTALWATCH_HTTP_ADDR="+addr))
	if err != nil {
		return nil, err
	}
	return &process{Process: p, kind: kind, httpAddr: addr}, nil
}

// stop sends SIGTERM to the process's pid, waits up to grace for a graceful
// exit, then SIGKILLs that same pid. It returns the exit status.
func (p *process) stop(grace time.Duration) int {
	p.stopping = true
	code, _ := p.Stop(grace)
	return code
}

// logTail returns the last lines the process logged.
func (p *process) logTail() string { return systest.Tail(p.Output(), 40) }

// finishDir removes a run's folder, or with keep (the -keep flag) writes
// what each process logged to dir/<name>.log and says on log where the
// folder is, calling its content what.
func finishDir(dir string, keep bool, procs []*process, log io.Writer, what string) {
	if dir == "" {
		return
	}
	if !keep {
		os.RemoveAll(dir)
		return
	}
	for _, p := range procs {
		if err := os.WriteFile(filepath.Join(dir, p.Name+".log"), []byte(p.Output()), 0o644); err != nil {
			fmt.Fprintf(log, "keep the log of %s: %v\n", p.Name, err)
		}
	}
	fmt.Fprintf(log, "%s kept in %s\n", what, dir)
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
