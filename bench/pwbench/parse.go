package pwbench

import (
	"bytes"
	"fmt"
	"net/url"
	"runtime"
	"syscall"
	"time"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
)

// parsedPage is a page as the crawler hands it to the parser: decoded to
// UTF-8, with its URL.
type parsedPage struct {
	html []byte
	url  *url.URL
}

// decodePages decodes up to max of the farm's pages at their current
// version, the way the crawler does (fetch.DecodeHTML), spread evenly over
// the farm so every language and size is represented.
func decodePages(f *farm, max int) ([]parsedPage, error) {
	step := max1(len(f.pages) / max)
	var out []parsedPage
	for i := 0; i < len(f.pages) && len(out) < max; i += step {
		p := f.pages[i]
		body := p.content.render(f.version(p, time.Now()))
		html, _ := fetch.DecodeHTML(body, p.content.contentType())
		u, err := url.Parse(p.url)
		if err != nil {
			return nil, err
		}
		out = append(out, parsedPage{html: html, url: u})
	}
	return out, nil
}

func max1(n int) int { return max(n, 1) }

// ceiling is the parse-only rate: html.Parse plus the breadth-first walk
// (domwalk.Parse, which also resolves and normalises each link), on one core.
type ceiling struct {
	pagesPerSec spread // over the repetitions
	pagesPerCPU spread // pages per CPU-second: what an idle core would do
	bytesPerPag float64
	linksPerPag float64
}

// parseCeiling runs domwalk.Parse over pages on one goroutine with
// GOMAXPROCS=1 (so the garbage collector shares that core too), reps times
// for at least d each, and returns the pages per second of each repetition.
// Nothing else of the harness runs meanwhile.
func parseCeiling(pages []parsedPage, reps int, d time.Duration) (ceiling, error) {
	if len(pages) == 0 {
		return ceiling{}, fmt.Errorf("parse ceiling: no pages")
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	runtime.GC()
	var c ceiling
	for _, p := range pages {
		c.bytesPerPag += float64(len(p.html))
	}
	c.bytesPerPag /= float64(len(pages))
	var rates, perCPU []float64
	for range reps {
		n, links := 0, 0
		cpu0 := processCPU()
		start := time.Now()
		for time.Since(start) < d {
			for _, p := range pages {
				l, _, err := domwalk.Parse(bytes.NewReader(p.html), p.url, domwalk.Limits{})
				if err != nil {
					return c, fmt.Errorf("parse %s: %w", p.url, err)
				}
				n++
				links += len(l)
			}
		}
		rates = append(rates, float64(n)/time.Since(start).Seconds())
		perCPU = append(perCPU, float64(n)/(processCPU()-cpu0))
		c.linksPerPag = float64(links) / float64(n)
	}
	c.pagesPerSec, c.pagesPerCPU = spreadOf(rates), spreadOf(perCPU)
	return c, nil
}

// processCPU returns the CPU seconds pwbench has used so far.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
