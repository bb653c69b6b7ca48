package article

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostilePages are pages made to hurt Extract, each within Options.MaxBytes
// unless its name says otherwise.
func hostilePages() []struct{ name, page string } {
	const mib = 1 << 20
	head := `<html><head><title>T</title></head><body><h1>Headline</h1>`
	var graph strings.Builder
	graph.WriteString(`<script type="application/ld+json">{"@graph":[`)
	for i := 0; graph.Len() < 4*mib; i++ {
		fmt.Fprintf(&graph, `{"@type":"Thing","@id":"#t%d","name":"thing %d","sameAs":["a","b"]},`, i, i)
	}
	graph.WriteString(`{"@type":"NewsArticle","headline":"h"}]}</script>`)
	return []struct{ name, page string }{
		{"nesting 100k levels", head + strings.Repeat("<div>", 100_000) + "text" + strings.Repeat("</div>", 100_000)},
		{"one text node of 5 MiB", head + "<p>" + strings.Repeat("word ", (5*mib-200)/5) + "</p>"},
		{"200k tiny elements (over MaxNodes)", head + strings.Repeat("<br>", 200_000)},
		{"99k spans (just under MaxNodes)", head + "<p>" + strings.Repeat("<span>w</span>", 99_000) + "</p>"},
		// Just under the body's budget: go-trafilatura reads them.
		{"15k spans (under the body's budget)", head + "<p>" + strings.Repeat("<span>w</span> ", 15_000) + "</p>"},
		{"0.9 MiB of text (under the body's budget)", head + "<p>" + strings.Repeat("word ", 900*1024/5) + "</p>"},
		{"huge attribute values", head + strings.Repeat(`<p data-x="`+strings.Repeat("v", mib)+`">text of a paragraph</p>`, 4)},
		{"20k JSON-LD blocks", head + strings.Repeat(`<script type="application/ld+json">{"@type":"NewsArticle","headline":"h","author":{"name":"a"}}</script>`, 20_000)},
		{"4 MiB JSON-LD @graph", head + graph.String() + "<p>text</p>"},
		{"1 MiB JSON-LD @graph (at the cap)", head + graph.String()[:strings.LastIndex(graph.String()[:mib-200], "},")+2] + `{"@type":"NewsArticle","headline":"h"}]}</script><p>text</p>`},
		{"4 MiB JSON-LD nested arrays", head + `<script type="application/ld+json">` + strings.Repeat("[", 2*mib) + strings.Repeat("]", 2*mib) + "</script>"},
	}
}

// peakHeap runs f and returns the most heap that objects took while it ran
// above what they took before (sampled every millisecond), and how long it
// took.
func peakHeap(f func()) (peak uint64, took time.Duration) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := read(); h > peak {
				peak = h
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	took = time.Since(start)
	close(done)
	wg.Wait()
	if h := read(); h > peak {
		peak = h
	}
	if peak < base {
		return 0, took
	}
	return peak - base, took
}

// TestHostilePages: on no page made to hurt it does Extract take more than
// the crawler's parse budget (64 MiB, crawler.DefaultParseMemory) of heap,
// or more than 2 s (not checked under the race detector, which slows
// Extract down about ten times).
func TestHostilePages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 5 MiB pages")
	}
	const maxHeap, maxTime = 64 << 20, 2 * time.Second
	u, _ := url.Parse("https://news.example/2024/05/01/story")
	for _, p := range hostilePages() {
		var err error
		page := []byte(p.page)
		peak, took := peakHeap(func() { _, err = Extract(context.Background(), page, u, Options{}) })
		t.Logf("%-36s %5.1f MiB page: peak heap %6.1f MiB, %6d ms, err %v", p.name, float64(len(page))/(1<<20), float64(peak)/(1<<20), took.Milliseconds(), err)
		if peak > maxHeap {
			t.Errorf("%s: peak heap %d MiB, over %d MiB", p.name, peak>>20, maxHeap>>20)
		}
		if took > maxTime && !raceEnabled {
			t.Errorf("%s: took %v, over %v", p.name, took, maxTime)
		}
	}
}

// TestBodySkippedSaysWhy: a page too large for the body step still gives
// its metadata, and says why it has no body instead of leaving it empty
// without a word; a page the step reads says nothing.
func TestBodySkippedSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 5 MiB pages")
	}
	u, _ := url.Parse("https://news.example/2024/05/01/story")
	want := map[string]bool{"one text node of 5 MiB": true, "99k spans (just under MaxNodes)": true, "a small page": false,
		"15k spans (under the body's budget)": false, "0.9 MiB of text (under the body's budget)": false}
	pages := append(hostilePages(), struct{ name, page string }{"a small page",
		"<html><head><title>A story</title></head><body><article><h1>A story</h1><p>" + strings.Repeat("Some words of the story. ", 40) + "</p></article></body></html>"})
	for _, p := range pages {
		skipped, ok := want[p.name]
		if !ok {
			continue
		}
		a, err := Extract(context.Background(), []byte(p.page), u, Options{})
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		if (a.BodySkipped != "") != skipped || skipped && a.ArticleBody != "" {
			t.Errorf("%s: bodySkipped %q with %d bytes of body, want skipped %v", p.name, a.BodySkipped, len(a.ArticleBody), skipped)
		}
	}
}
