package pwbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// articlePages are the real article pages of internal/article/testdata
// (about 12 MB gzipped, 326 pages), unzipped, which the farms serve as the
// targets of links.
type articlePages struct {
	pages [][]byte
}

func loadArticlePages(repo string) (*articlePages, error) {
	files, err := filepath.Glob(filepath.Join(repo, "internal", "article", "testdata", "*", "html", "*.html.gz"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("article pages: none found under %s/internal/article/testdata (%v)", repo, err)
	}
	sort.Strings(files)
	a := &articlePages{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		page, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		a.pages = append(a.pages, page)
	}
	return a, nil
}

// bytes is the size of all pages, unzipped.
func (a *articlePages) bytes() int {
	n := 0
	for _, p := range a.pages {
		n += len(p)
	}
	return n
}

// serve answers any path with one of the pages, chosen by the path, so
// that one URL always reads the same article.
func (a *articlePages) serve(w http.ResponseWriter, r *http.Request) {
	h := fnv.New32a()
	io.WriteString(h, r.URL.RequestURI())
	page := a.pages[int(h.Sum32()%uint32(len(a.pages)))]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	_, _ = w.Write(page)
}

// absoluteHref matches the start of an href that names another host:
// http://, https:// or protocol-relative //, quoted or not.
var absoluteHref = regexp.MustCompile(`(?i)(href\s*=\s*["']?)(?:https?:)?//`)

// localLinks rewrites body so that every link to another host points at a
// path of the page's own host instead: href="https://www.example.com/a"
// becomes href="/x/www.example.com/a". The replayed histories link real
// hosts; with their links local, the extractor reads every article from the
// farm on loopback, which answers every path that is no page with a real
// article page, and nothing leaves the machine. Links are rewritten before
// the truth is parsed from the body, so the truth holds the local links.
func localLinks(body []byte) []byte {
	return absoluteHref.ReplaceAll(body, []byte("${1}/x/"))
}

// articlesConfig configures "pwbench articles".
type articlesConfig struct {
	svc         services
	repo        string
	links       int // links given to the extractor
	hosts       int // loopback origins the links spread over
	concurrency int // PORTALWATCH_EXTRACTOR_CONCURRENCY
	env         envList
	timeout     time.Duration
	keep        bool
}

// articlesResult is what "pwbench articles" prints as JSON.
type articlesResult struct {
	Links        int     `json:"links"`
	CorpusPages  int     `json:"corpus_pages"`
	CorpusMB     float64 `json:"corpus_mb"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"articles_per_s"`
	ExtractorCPU float64 `json:"extractor_cpu_s"`
	PostgresCPU  float64 `json:"postgres_cpu_s"`
	RedisCPU     float64 `json:"redis_cpu_s"`
	PwbenchCPU   float64 `json:"farm_cpu_s"`
	// PerCore is articles a second per core the extractor, PostgreSQL
	// and Redis kept busy: articles / their CPU seconds.
	PerCore float64 `json:"articles_per_s_per_core"`
	// PerExtractorCore counts the extractor's CPU alone.
	PerExtractorCore float64        `json:"articles_per_s_per_extractor_core"`
	Statuses         map[string]int `json:"statuses"`
	RSSMB            float64        `json:"extractor_rss_mb"`
}

// runArticles measures the extractor end to end: links to the real article
// pages, served on loopback, are given to one extractor as the processor
// would (an update and its work each), and it reads them all; it reports
// articles a second, per core of CPU spent, and the extractor's peak RSS.
func runArticles(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c articlesConfig
	fs := flag.NewFlagSet("pwbench articles", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFlags(fs, &c.svc, &c.repo)
	fs.IntVar(&c.links, "links", 3000, "links given to the extractor (each corpus page is served under many URLs)")
	fs.IntVar(&c.hosts, "hosts", 16, "loopback origins (127.0.1.x) the links spread over")
	fs.IntVar(&c.concurrency, "concurrency", 8, "PORTALWATCH_EXTRACTOR_CONCURRENCY")
	fs.Var(&c.env, "env", "NAME=VALUE for the extractor (repeatable)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "stop the run after this long, whatever happens")
	fs.BoolVar(&c.keep, "keep", false, "keep the extractor's log")
	if err := fs.Parse(args); err != nil || c.links < 1 || c.hosts < 1 {
		return ErrUsage
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}

	corpus, err := loadArticlePages(c.repo)
	if err != nil {
		return err
	}
	h, err := newHarness(ctx, c.svc, c.repo, "", stderr)
	if err != nil {
		return err
	}
	defer h.Close()
	db, err := h.pool(ctx)
	if err != nil {
		return err
	}
	defer db.Close()

	ls, err := listenFarm(c.hosts)
	if err != nil {
		return err
	}
	var served atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		served.Add(1)
		corpus.serve(w, r)
	})}
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() { _ = srv.Serve(l) })
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		wg.Wait()
	}()

	// One page that reads articles, and one update with its work for each
	// link, as the processor's check statement writes them.
	urls := make([]string, c.links)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://%s/story/%d", ls[i%len(ls)].Addr().(*net.TCPAddr).String(), i)
	}
	if _, err := db.Exec(ctx, `
		WITH page AS (INSERT INTO pages (base_url) VALUES ('http://127.0.1.1/portal/') RETURNING id),
		news AS (
			INSERT INTO updates (page_id, link_key, url, text, code, discovered_at)
			SELECT page.id, n, u, 'story ' || n, 'c' || n, now() FROM page, unnest($1::text[]) WITH ORDINALITY AS l(u, n)
			RETURNING page_id, url, discovered_at)
		INSERT INTO article_work (url, page_id, discovered_at)
		SELECT url, page_id, discovered_at FROM news`, urls); err != nil {
		return fmt.Errorf("give the extractor its links: %w", err)
	}
	logf("%d links to %d real article pages (%.1f MB) on %d loopback origins", c.links, len(corpus.pages),
		float64(corpus.bytes())/(1<<20), c.hosts)

	env := append(h.sb.Env(), "PORTALWATCH_LOG_LEVEL=warn", "PORTALWATCH_SHUTDOWN_TIMEOUT=10s",
		"PORTALWATCH_EXTRACTOR_CONCURRENCY="+strconv.Itoa(c.concurrency), "PORTALWATCH_ARTICLE_POLL=50ms",
		"PORTALWATCH_ARTICLES_PER_ORIGIN_DAY=0")
	env = append(env, c.env...)
	var procs []*process
	// PostgreSQL is counted by the run database's backends only, as in
	// pwbench e2e: other work on a shared server is not the extractor's.
	meter := (&e2eRun{db: db}).meter(ctx)
	meter.programs = func() []*process { return procs }
	start := time.Now()
	p, err := startProgram(h.program("extractor"), "extractor-1", "extractor", env)
	if err != nil {
		return err
	}
	procs = append(procs, p)
	before := meter.sample()
	dir, _ := os.MkdirTemp("", "pwbench-articles-")
	defer func() { finishDir(dir, c.keep, procs, stderr, "the extractor's log") }()
	defer p.stop(30 * time.Second)

	var left int
	err = testsvc.Poll(ctx, c.timeout, 100*time.Millisecond, func() (bool, string, error) {
		if p.Exited() {
			return false, "", fmt.Errorf("the extractor exited:\n%s", p.logTail())
		}
		err := db.QueryRow(ctx, `SELECT count(*) FROM article_work`).Scan(&left)
		return left == 0, fmt.Sprintf("%d of %d links left", left, c.links), err
	})
	elapsed := time.Since(start)
	after := meter.sample()
	if err != nil {
		return err
	}
	rss, err := peakRSS(p.Pid())
	if err != nil {
		return err
	}
	d := bornIn(before, after)
	res := articlesResult{
		Links: c.links, CorpusPages: len(corpus.pages), CorpusMB: round3(float64(corpus.bytes()) / (1 << 20)),
		Seconds: round3(elapsed.Seconds()), PerSecond: round3(float64(c.links) / elapsed.Seconds()),
		ExtractorCPU: round3(d.byGroup["extractor"]), PostgresCPU: round3(d.byGroup["postgres"]),
		RedisCPU: round3(d.byGroup["redis"]), PwbenchCPU: round3(d.byGroup["pwbench"]),
		RSSMB: round3(float64(rss) / (1 << 20)), Statuses: map[string]int{},
	}
	busy := d.byGroup["extractor"] + d.byGroup["postgres"] + d.byGroup["redis"]
	res.PerCore = round3(float64(c.links) / busy)
	res.PerExtractorCore = round3(float64(c.links) / d.byGroup["extractor"])
	rows, err := db.Query(ctx, `SELECT a.status, count(*) FROM updates u JOIN article_links l ON l.url = u.url
		JOIN articles a ON a.id = l.article_id GROUP BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return err
		}
		res.Statuses[s] = n
	}
	rows.Close()
	fmt.Fprintf(stdout, "%d articles in %.1fs: %.1f/s; CPU s: extractor %.1f, PostgreSQL %.1f, Redis %.1f (farm %.1f)\n",
		c.links, elapsed.Seconds(), res.PerSecond, res.ExtractorCPU, res.PostgresCPU, res.RedisCPU, res.PwbenchCPU)
	fmt.Fprintf(stdout, "articles a second per core: %.1f (extractor, PostgreSQL and Redis), %.1f (extractor alone); statuses %v; extractor peak RSS %.0f MB\n",
		res.PerCore, res.PerExtractorCore, res.Statuses, res.RSSMB)
	return printJSON(stdout, res)
}

// bornIn is the CPU seconds spent by group between two samples, counting
// the whole of every process that is in the later sample only: the
// extractor and the PostgreSQL backends it opens start after the first
// sample, so all their CPU falls in between (cpuSample.sub leaves them
// out). A backend that exits in between is not counted.
func bornIn(before, after cpuSample) cpuDelta {
	d := cpuDelta{byGroup: map[string]float64{}, machineBusy: after.machineBusy - before.machineBusy,
		machineAll: after.machineAll - before.machineAll}
	for pid, a := range after.byPID {
		d.byGroup[a.group] += a.secs - before.byPID[pid].secs
	}
	return d
}
