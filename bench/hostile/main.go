// Command hostile measures the crawler's memory under hostile pages (issue 9):
// it builds the real crawler, starts it at default settings against a
// loopback server serving a mix of pages meant to hurt it (10 MiB of "<p>" or
// "<br>" sent as ~10 KB of gzip, gzip and brotli bombs, the largest real
// portals of ../shared/corpus) and of normal pages, and consumes the tasks
// itself, so only RabbitMQ is needed. Its last output line is one JSON
// object: the crawler's peak RSS (VmHWM) and the recall of the normal pages'
// links.
//
//	go run ./bench/hostile -repo .       (make bench-hostile)
//
// It uses queue names of its own, sends traffic to loopback only, is bounded
// by -timeout, and removes its queues and binary when done.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/andybalholm/brotli"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// mix is how many jobs of each kind one run sends.
type mix struct {
	normal, paragraphs, breaks, gzipBombs, brotliBombs, portals int
}

func main() {
	repo := flag.String("repo", ".", "the repository to build cmd/crawler from")
	amqpURL := flag.String("amqp", envOr("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ URL")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	var m mix
	flag.IntVar(&m.normal, "normal", 200, "normal pages of 50 links each")
	flag.IntVar(&m.paragraphs, "p", 24, `pages of ~10 MiB of "<p>", gzip-encoded`)
	flag.IntVar(&m.breaks, "br", 24, `pages of ~10 MiB of "<br>", gzip-encoded`)
	flag.IntVar(&m.gzipBombs, "gzip-bombs", 12, "gzip bodies inflating to 256 MiB")
	flag.IntVar(&m.brotliBombs, "brotli-bombs", 12, "brotli bodies inflating to 256 MiB")
	flag.IntVar(&m.portals, "portals", 24, "the largest real portals of the corpus, cycled")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := run(*repo, *amqpURL, *timeout, m, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench hostile:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if !res.Pass {
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// result is the JSON line.
type result struct {
	Bench          string  `json:"bench"`
	Jobs           int     `json:"jobs"`
	Hostile        int     `json:"hostile_pages"`
	Normal         int     `json:"normal_pages"`
	NormalRecorded int     `json:"normal_recorded"`
	LinkRecall     float64 `json:"normal_link_recall"`
	PeakRSSMB      float64 `json:"crawler_peak_rss_mb"`
	TargetRSSMB    int     `json:"target_rss_mb"`
	Elapsed        float64 `json:"elapsed_s"`
	Pass           bool    `json:"pass"`
}

const targetRSSMB = 200

func run(repo, amqpURL string, timeout time.Duration, m mix, log *slog.Logger) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "pwbench-hostile-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	build := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/crawler")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("go build ./cmd/crawler in %s: %v\n%s", repo, err, out)
	}

	site, err := newSite(m)
	if err != nil {
		return result{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: site, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	defer srv.Close()
	origin := "http://" + ln.Addr().String()

	id := strconv.Itoa(os.Getpid())
	jobQueue, taskQueue := "pwbench_hostile_"+id+"_job_queue", "pwbench_hostile_"+id+"_task_queue"
	defer deleteQueues(amqpURL, log, jobQueue, jobQueue+".dlq", taskQueue, taskQueue+".dlq")
	qcfg := queue.Config{URL: amqpURL, Name: "pwbench hostile " + id}
	pub, err := queue.NewPublisher(qcfg, log, jobQueue, taskQueue)
	if err != nil {
		return result{}, fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()

	paths := site.paths()
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	msgs := make([]watch.Message, len(paths))
	for i, p := range paths {
		body, err := watch.EncodeJob(watch.Job{ID: int64(i + 1), BaseURL: origin + p})
		if err != nil {
			return result{}, err
		}
		msgs[i] = watch.Message{Body: body}
	}
	if err := pub.Publish(ctx, jobQueue, msgs...); err != nil {
		return result{}, fmt.Errorf("publish %d jobs: %w", len(msgs), err)
	}

	start := time.Now()
	crawler := exec.Command(filepath.Join(dir, "crawler"))
	crawler.Env = append(os.Environ(), "AMQP_URL="+amqpURL, "PORTALWATCH_JOB_QUEUE="+jobQueue,
		"PORTALWATCH_TASK_QUEUE="+taskQueue, "PORTALWATCH_ALLOW_PRIVATE=true", "PORTALWATCH_IGNORE_ROBOTS=true",
		"PORTALWATCH_HTTP_ADDR=off", "PORTALWATCH_LOG_LEVEL=warn",
		// Every page is served by one loopback origin, where a fleet would
		// meet hundreds: the per-origin spacing and in-flight cap would
		// otherwise defer all but a few checks and leave nothing to measure.
		"PORTALWATCH_HOST_SPACING=0", "PORTALWATCH_HOST_MAX_INFLIGHT=0")
	var crawlerLog bytes.Buffer
	crawler.Stdout, crawler.Stderr = &crawlerLog, &crawlerLog
	if err := crawler.Start(); err != nil {
		return result{}, fmt.Errorf("start crawler: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- crawler.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			crawler.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	}()

	tasks := newCollector(len(paths))
	consumer, err := queue.NewConsumer(queue.ConsumerConfig{Config: qcfg, Queue: taskQueue, Prefetch: 32, Workers: 2},
		log, tasks.handle, pub)
	if err != nil {
		return result{}, fmt.Errorf("consumer: %w", err)
	}
	consumeCtx, stopConsuming := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() { consumed <- consumer.Run(consumeCtx) }()
	select {
	case <-tasks.done:
	case err := <-exited:
		stopped = true
		stopConsuming()
		<-consumed
		return result{}, fmt.Errorf("crawler exited early (%v):\n%s", err, tail(crawlerLog.String()))
	case <-ctx.Done():
		stopConsuming()
		<-consumed
		return result{}, fmt.Errorf("%d of %d tasks after %s", tasks.count(), len(paths), timeout)
	}
	elapsed := time.Since(start)
	peak, err := peakRSS(crawler.Process.Pid)
	stopConsuming()
	<-consumed
	if err != nil {
		return result{}, err
	}

	res := result{Bench: "hostile", Jobs: len(paths), Hostile: len(paths) - m.normal, Normal: m.normal,
		PeakRSSMB: float64(peak) / (1 << 20), TargetRSSMB: targetRSSMB, Elapsed: elapsed.Seconds()}
	var found, want int
	for i, p := range paths {
		links, normal := site.normalLinks(origin, p)
		if !normal {
			continue
		}
		task := tasks.get(int64(i + 1))
		if task.Failed() {
			log.Warn("normal page failed", "url", origin+p, "err", task.Error)
		} else {
			res.NormalRecorded++
		}
		got := make(map[string]bool, len(task.Context))
		for _, l := range task.Context {
			got[l.URL] = true
		}
		for _, u := range links {
			if got[u] {
				found++
			}
		}
		want += len(links)
	}
	if want > 0 {
		res.LinkRecall = float64(found) / float64(want)
	}
	res.Pass = res.PeakRSSMB <= targetRSSMB && res.NormalRecorded == m.normal && found == want
	return res, nil
}

// peakRSS reads VmHWM, the process's peak resident set, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the crawler's peak RSS: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM line %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status: the crawler's peak RSS is unknown")
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// collector keeps the first task of each page id and says when every page
// has one.
type collector struct {
	mu    sync.Mutex
	tasks map[int64]watch.Task
	want  int
	done  chan struct{}
}

func newCollector(want int) *collector {
	return &collector{tasks: make(map[int64]watch.Task, want), want: want, done: make(chan struct{})}
}

func (c *collector) handle(_ context.Context, d watch.Delivery) error {
	task, err := watch.DecodeTask(d.Body)
	if err != nil {
		return watch.Permanent(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.tasks[task.ID]; seen {
		return nil
	}
	c.tasks[task.ID] = task
	if len(c.tasks) == c.want {
		close(c.done)
	}
	return nil
}

func (c *collector) count() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.tasks) }

func (c *collector) get(id int64) watch.Task { c.mu.Lock(); defer c.mu.Unlock(); return c.tasks[id] }

func deleteQueues(amqpURL string, log *slog.Logger, names ...string) {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		log.Warn("delete the benchmark's queues", "err", err)
		return
	}
	defer conn.Close()
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			log.Warn("delete queue", "queue", name, "err", err)
			return
		}
		if _, err := ch.QueueDelete(name, false, false, false); err != nil && !strings.Contains(err.Error(), "NOT_FOUND") {
			log.Warn("delete queue", "queue", name, "err", err)
		}
		ch.Close()
	}
}

// site serves the mix. Each hostile body is built once and served for every
// page of its kind.
type site struct {
	m                    mix
	paragraphs, breaks   []byte // gzip
	gzipBomb, brotliBomb []byte
	portals              [][]byte
}

const (
	inflatedSize = 10<<20 - 4<<10 // just under the crawler's default body cap
	bombSize     = 256 << 20
)

func newSite(m mix) (*site, error) {
	s := &site{m: m}
	var err error
	if s.paragraphs, err = gzipped(bytes.Repeat([]byte("<p>"), inflatedSize/3)); err != nil {
		return nil, err
	}
	if s.breaks, err = gzipped(bytes.Repeat([]byte("<br>"), inflatedSize/4)); err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	var gz, br bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	bw := brotli.NewWriterLevel(&br, brotli.BestSpeed)
	for range bombSize / len(zeros) {
		zw.Write(zeros)
		bw.Write(zeros)
	}
	if err := errors.Join(zw.Close(), bw.Close()); err != nil {
		return nil, err
	}
	s.gzipBomb, s.brotliBomb = gz.Bytes(), br.Bytes()
	if m.portals > 0 {
		pages, err := corpus.LoadPages(corpus.Dir())
		if err != nil {
			return nil, fmt.Errorf("real portals (../shared/corpus): %w", err)
		}
		slices.SortFunc(pages, func(a, b corpus.Page) int { return len(b.Body) - len(a.Body) })
		for _, p := range pages[:min(4, len(pages))] {
			s.portals = append(s.portals, p.Body)
		}
	}
	return s, nil
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	err := zw.Close()
	return buf.Bytes(), err
}

// paths returns the path of every page of the mix.
func (s *site) paths() []string {
	var paths []string
	add := func(kind string, n int) {
		for i := range n {
			paths = append(paths, fmt.Sprintf("/%s/%d/", kind, i))
		}
	}
	add("normal", s.m.normal)
	add("p", s.m.paragraphs)
	add("br", s.m.breaks)
	add("gzip-bomb", s.m.gzipBombs)
	add("brotli-bomb", s.m.brotliBombs)
	add("portal", s.m.portals)
	return paths
}

const linksPerNormalPage = 50

// normalLinks returns the links a normal page at path has, and false for a
// page of another kind.
func (s *site) normalLinks(origin, path string) ([]string, bool) {
	var n int
	if _, err := fmt.Sscanf(path, "/normal/%d/", &n); err != nil {
		return nil, false
	}
	links := make([]string, linksPerNormalPage)
	for j := range links {
		links[j] = fmt.Sprintf("%s/normal/%d/story-%d", origin, n, j)
	}
	return links, true
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	n, _ := strconv.Atoi(strings.TrimSuffix(rest, "/"))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	switch kind {
	case "normal":
		fmt.Fprintf(w, "<!doctype html><title>Normal %d</title><ul>", n)
		for j := range linksPerNormalPage {
			fmt.Fprintf(w, `<li><a href="/normal/%d/story-%d">Story %d of page %d</a>`, n, j, j, n)
		}
		fmt.Fprint(w, "</ul>")
	case "p":
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(s.paragraphs)
	case "gzip-bomb":
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(s.gzipBomb)
	case "br":
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(s.breaks)
	case "brotli-bomb":
		w.Header().Set("Content-Encoding", "br")
		w.Write(s.brotliBomb)
	case "portal":
		if len(s.portals) == 0 {
			http.NotFound(w, r)
			return
		}
		w.Write(s.portals[n%len(s.portals)])
	default:
		http.NotFound(w, r)
	}
}
