package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// profile samples each program with Linux perf (perf record -g at 499 Hz)
// for d while the load goes on, and returns each one's top entries by self
// time. The real programs are profiled as built, unchanged: Go binaries keep
// frame pointers and symbols, which is all perf needs. Without perf it
// returns nothing and says why.
func (r *e2eRun) profile(ctx context.Context, d time.Duration) map[string][]string {
	if _, err := exec.LookPath("perf"); err != nil {
		r.logf("perf not found: no profiles (apt-get install linux-perf)")
		return nil
	}
	r.logf("profiling each program with perf for %s", d)
	out := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range r.procs {
		data := filepath.Join(r.dir, p.name+".perf.data")
		wg.Go(func() {
			secs := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
			rec := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-g", "-o", data,
				"-p", strconv.Itoa(p.pid()), "--", "sleep", secs)
			if b, err := rec.CombinedOutput(); err != nil {
				r.logf("perf record %s: %v: %s", p.name, err, lastLine(b))
				return
			}
			rep := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--no-children",
				"--sort", "symbol", "--percent-limit", "1", "-g", "none")
			b, err := rep.Output()
			if err != nil {
				r.logf("perf report %s: %v", p.name, err)
				return
			}
			mu.Lock()
			out[p.name] = topEntries(b, 15)
			mu.Unlock()
		})
	}
	wg.Wait()
	if r.cfg.keep {
		r.logf("perf data in %s (perf report -i <file>)", r.dir)
	}
	return out
}

// topEntries returns the first n sample lines of perf report --stdio.
func topEntries(report []byte, n int) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(report))
	for sc.Scan() && len(out) < n {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || !strings.Contains(line, "%") {
			continue
		}
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return out
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
