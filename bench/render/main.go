// Command render measures the renderer (issue 35): it serves the corpus'
// real pages (../shared/corpus/pages) and hostile pages (scripts that
// allocate, loop, or open sockets forever) from loopback, renders them with
// the renderer at its default settings (2 tabs) in its real Chromium, with
// every request outside the farm's exact address refused, and reports
// rendered pages per second, per CPU second of the renderer and its browser
// together, and their peak memory. Its last output line is one JSON object.
//
//	go run ./bench/render            (make bench-render)
//
// It needs Chromium only; it is bounded by -timeout and -pages.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/renderer"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// hostile are pages meant to hurt a renderer.
var hostile = map[string]string{
	"allocate": `<script>const keep = []; setInterval(() => { for (let i = 0; i < 50; i++) keep.push(new Array(1e5).fill(Math.random())); }, 10);</script><a href="/a">a</a>`,
	"loop":     `<a href="/b">b</a><script>setTimeout(() => { for (;;) {} }, 50);</script>`,
	"sockets":  `<a href="/c">c</a><script>setInterval(() => { for (let i = 0; i < 20; i++) { try { new WebSocket('ws://' + location.host + '/ws' + Math.random()); } catch (e) {} fetch('/slow?' + Math.random()).catch(() => {}); } }, 20);</script>`,
	"dom":      `<script>setInterval(() => { for (let i = 0; i < 5000; i++) document.body.appendChild(document.createElement('div')).textContent = 'x'.repeat(100); }, 5);</script><a href="/d">d</a>`,
}

type result struct {
	Pages          int     `json:"pages"`
	Rendered       int     `json:"rendered"`
	Failed         int     `json:"failed"`
	Hostile        int     `json:"hostile"`
	Seconds        float64 `json:"seconds"`
	PagesPerSecond float64 `json:"pages_per_second"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	PagesPerCPUSec float64 `json:"pages_per_cpu_second"`
	IdleBrowserMiB float64 `json:"idle_browser_pss_mib"`
	PeakBrowserMiB float64 `json:"peak_browser_pss_mib"`
	PeakSelfMiB    float64 `json:"peak_renderer_rss_mib"`
	PeakTotalMiB   float64 `json:"peak_total_mib"`
	PerTabMiB      float64 `json:"memory_per_tab_mib"`
	Tabs           int     `json:"tabs"`
	Pass           bool    `json:"pass"`
}

func main() {
	pages := flag.Int("pages", 120, "corpus pages to render, cycled")
	rounds := flag.Int("hostile", 2, "times each hostile page is rendered")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	tabs := flag.Int("tabs", renderer.DefaultTabs, "tabs")
	limit := flag.Int("limit-mib", 1024, "the renderer with its browser must stay under this many MiB")
	flag.Parse()
	res, err := run(*pages, *rounds, *tabs, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench render:", err)
		os.Exit(1)
	}
	res.Pass = res.PeakTotalMiB <= float64(*limit) && res.Rendered > 0
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if !res.Pass {
		os.Exit(1)
	}
}

func run(n, rounds, tabs int, timeout time.Duration) (result, error) {
	corpusPages, err := corpus.LoadPages(corpus.Dir())
	if err != nil {
		return result{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	byName := map[string][]byte{}
	for _, p := range corpusPages {
		byName[p.Name] = p.Body
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/p/")
		if body, ok := byName[name]; ok {
			w.Header().Set("Content-Type", "text/html")
			w.Write(body)
			return
		}
		if h, ok := hostile[strings.TrimPrefix(r.URL.Path, "/h/")]; ok {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<!doctype html><title>hostile</title><body>"+h)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/slow") || strings.HasPrefix(r.URL.Path, "/ws") {
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	docs, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		return result{}, err
	}
	level := slog.LevelWarn
	if os.Getenv("BENCH_DEBUG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	rend, err := renderer.New(renderer.Config{Tabs: tabs, AllowAddrs: ln.Addr().String(),
		NoSandbox: os.Getenv("PORTALWATCH_RENDER_NO_SANDBOX") == "true", DialGuard: fetch.DialGuardAllowing}, docs, log, prometheus.NewRegistry())
	if err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone := make(chan struct{})
	go func() { rend.Run(watchCtx); close(watchDone) }()

	base := "http://" + ln.Addr().String()
	var urls []string
	for i := range n {
		urls = append(urls, base+"/p/"+corpusPages[i%len(corpusPages)].Name)
	}
	hostileURLs := 0
	for range rounds {
		for name := range hostile {
			urls = append(urls, base+"/h/"+name)
			hostileURLs++
		}
	}
	res := result{Pages: len(urls), Hostile: hostileURLs, Tabs: tabs}

	// The idle figure: a browser started, no page in it.
	if _, err := rend.Fetch(ctx, watch.FetchRequest{URL: base + "/p/" + corpusPages[0].Name}); err != nil {
		return res, fmt.Errorf("first page: %w", err)
	}
	time.Sleep(time.Second)
	res.IdleBrowserMiB = mib(rend.BrowserMemory())

	var peakBrowser, peakTotal atomic.Int64
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-t.C:
			}
			b := rend.BrowserMemory()
			self := selfRSS()
			peakBrowser.Store(max(peakBrowser.Load(), b))
			peakTotal.Store(max(peakTotal.Load(), b+self))
		}
	}()

	var rendered, failed atomic.Int64
	start := time.Now()
	work := make(chan string)
	var wg sync.WaitGroup
	for range tabs {
		wg.Go(func() {
			for u := range work {
				if _, err := rend.Fetch(ctx, watch.FetchRequest{URL: u}); err != nil {
					failed.Add(1)
					log.Info("page failed", "url", u, "err", err)
					continue
				}
				rendered.Add(1)
			}
		})
	}
	for _, u := range urls {
		select {
		case work <- u:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	stopWatch()
	<-watchDone
	<-sampleDone
	rend.Close()
	res.Rendered, res.Failed = int(rendered.Load()), int(failed.Load())
	res.PagesPerSecond = float64(res.Rendered) / res.Seconds
	res.CPUSeconds = cpuSeconds()
	if res.CPUSeconds > 0 {
		res.PagesPerCPUSec = float64(res.Rendered) / res.CPUSeconds
	}
	res.PeakBrowserMiB, res.PeakTotalMiB = mib(peakBrowser.Load()), mib(peakTotal.Load())
	res.PeakSelfMiB = mib(selfPeakRSS())
	res.PerTabMiB = (res.PeakBrowserMiB - res.IdleBrowserMiB) / float64(tabs)
	return res, ctx.Err()
}

func mib(b int64) float64 { return float64(b*100>>20) / 100 }

// selfRSS and selfPeakRSS read this process's VmRSS and VmHWM.
func selfRSS() int64     { return statusKB("VmRSS:") << 10 }
func selfPeakRSS() int64 { return statusKB("VmHWM:") << 10 }

func statusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb
		}
	}
	return 0
}

// cpuSeconds is the CPU time of this process and of its reaped children,
// the browsers and their processes.
func cpuSeconds() float64 {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	sec := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return sec(self.Utime) + sec(self.Stime) + sec(children.Utime) + sec(children.Stime)
}
