package pwbench

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
		data := filepath.Join(r.dir, p.Name+".perf.data")
		wg.Go(func() {
			secs := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
			rec := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-g", "-o", data,
				"-p", strconv.Itoa(p.Pid()), "--", "sleep", secs)
			if b, err := rec.CombinedOutput(); err != nil {
				r.logf("perf record %s: %v: %s", p.Name, err, lastLine(b))
				return
			}
			rep := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--no-children",
				"--sort", "symbol", "--percent-limit", "1", "-g", "none")
			b, err := rep.Output()
			if err != nil {
				r.logf("perf report %s: %v", p.Name, err)
				return
			}
			lines := topEntries(b, 12)
			script, err := exec.CommandContext(ctx, "perf", "script", "-i", data, "-F", "ip,sym").Output()
			if err == nil {
				lines = append(lines, "inclusive share of samples by component:")
				lines = append(lines, components(script)...)
			}
			mu.Lock()
			out[p.Name] = lines
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

// component names a part of a program by a frame its stacks contain.
type component struct{ name, frame string }

// profileComponents are the parts of the programs worth telling apart, by
// a frame that is on the stack while they run. Shares are inclusive and
// overlap (a garbage-collection assist runs inside the parser).
var profileComponents = []component{
	{"x/net/html parse", "html.ParseWithOptions"},
	{"domwalk BFS (with urlnorm)", "domwalk.Links"},
	{"urlnorm", "urlnorm."},
	{"charset decoding", "fetch.DecodeHTML"},
	{"fetch (HTTP, body)", "fetch.(*Client).Fetch"},
	{"JSON encode", "json.Marshal"},
	{"JSON decode", "json.Unmarshal"},
	{"AMQP (amqp091)", "amqp091-go"},
	{"PostgreSQL (pgx)", "jackc/pgx"},
	{"Redis (go-redis)", "go-redis"},
	{"shortlink", "shortlink."},
	{"logging (slog)", "log/slog"},
	{"GC background", "gcBgMarkWorker"},
	{"GC assist", "gcAssistAlloc"},
	{"scavenger (madvise)", "bgscavenge"},
	{"sysmon", "runtime.sysmon"},
	{"syscalls (kernel)", "entry_SYSCALL_64"},
}

// components returns each component's share of the samples of perf script
// output (one frame per line, samples separated by blank lines).
func components(script []byte) []string {
	counts := make([]int, len(profileComponents))
	samples := 0
	var stack []string
	flush := func() {
		if len(stack) == 0 {
			return
		}
		samples++
		for i, c := range profileComponents {
			for _, f := range stack {
				if strings.Contains(f, c.frame) {
					counts[i]++
					break
				}
			}
		}
		stack = stack[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(script))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			flush()
			continue
		}
		stack = append(stack, line)
	}
	flush()
	var out []string
	for i, c := range profileComponents {
		if samples > 0 && counts[i] > 0 {
			out = append(out, fmt.Sprintf("  %5.1f%%  %s", 100*float64(counts[i])/float64(samples), c.name))
		}
	}
	return out
}
