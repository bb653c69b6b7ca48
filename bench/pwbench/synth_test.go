package pwbench

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

// synthFarm serves n synthetic pages on one loopback listener.
func synthFarm(t *testing.T, n int, cfg synthConfig) *farm {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFarm([]net.Listener{l}, newSynthPages(n, []net.Listener{l}, cfg), time.Second)
	t.Cleanup(f.Close)
	return f
}

var testShape = synthConfig{minKB: 20, maxKB: 40, minAnchors: 100, maxAnchors: 150, perRound: 3, visible: 4, seed: 7}

func TestSynthPagesAreDeterministicAndShaped(t *testing.T) {
	t.Parallel()
	a, b := synthFarm(t, 10, testShape), synthFarm(t, 10, testShape)
	for i, p := range a.pages {
		q := b.pages[i]
		ra, rb := p.content.render(2), q.content.render(2)
		// The hosts differ (two listeners); everything else must not.
		ha, _ := splitURL(p.url)
		hb, _ := splitURL(q.url)
		if !bytes.Equal(ra, bytes.ReplaceAll(rb, []byte(hb), []byte(ha))) {
			t.Errorf("page %d: two farms with one seed render different bodies", i)
		}
		if n := len(ra); n < 1000*testShape.minKB*9/10 || n > 1000*testShape.maxKB*11/10 {
			t.Errorf("page %d: %d bytes, want about %d–%d KB", i, n, testShape.minKB, testShape.maxKB)
		}
		if got := p.content.links(2); len(got) != testShape.perRound*testShape.visible {
			t.Errorf("page %d: %d latest links, want perRound × visible = %d", i, len(got), testShape.perRound*testShape.visible)
		}
	}
}

func TestSynthPagesAddPerRoundLinksEachVersion(t *testing.T) {
	t.Parallel()
	p := synthFarm(t, 1, testShape).pages[0].content
	v1, v2 := set(p.links(1)), set(p.links(2))
	var added, dropped int
	for u := range v2 {
		if !v1[u] {
			added++
		}
	}
	for u := range v1 {
		if !v2[u] {
			dropped++
		}
	}
	if added != testShape.perRound || dropped != testShape.perRound {
		t.Errorf("version 1 → 2: %d links added, %d dropped; want %d each", added, dropped, testShape.perRound)
	}
}

// TestFarmTruthAgreesWithTheParser checks every language and charset mix
// and every spelling of the latest links: the truth counts only links the
// product's parser finds, or the benchmark would blame the pipeline.
func TestFarmTruthAgreesWithTheParser(t *testing.T) {
	t.Parallel()
	f := synthFarm(t, 12, testShape) // i % 10 covers every language
	if err := selfCheck(f); err != nil {
		t.Fatal(err)
	}
	charsets := map[string]bool{}
	for _, p := range f.pages {
		charsets[p.content.(*synthPage).lang.charset] = true
	}
	if len(charsets) != len(languages)-1 { // en and fr share utf-8
		t.Errorf("charsets served %v, want all of the languages'", charsets)
	}
}

func TestFarmTruthCountsServedVersionsFromTheirChangeTime(t *testing.T) {
	t.Parallel()
	f := synthFarm(t, 1, testShape)
	p := f.pages[0]
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.startRounds(start)
	if v := f.version(p, start.Add(2500*time.Millisecond)); v != 3 {
		t.Fatalf("version 2.5 rounds in = %d, want 3", v)
	}
	p.served = map[int]bool{0: true, 3: true} // versions 1 and 2 were never fetched
	truth := f.truth()[0]
	// Only version 3 was served after the baseline: its links that the
	// baseline lacks are the truth, each dated from the first version of
	// its run, served or not.
	base, v3 := set(p.content.links(0)), p.content.links(3)
	want := 0
	for _, u := range v3 {
		if !base[u] {
			want++
		}
	}
	if len(truth) != want {
		t.Fatalf("truth holds %d links, want the %d of version 3 not in the baseline", len(truth), want)
	}
	for u, l := range truth {
		first := 3
		for first > 1 && set(p.content.links(first - 1))[u] {
			first--
		}
		if !l.introduced.Equal(f.changeTime(p, first)) {
			t.Errorf("%s introduced %s, want version %d's change time %s", u, l.introduced, first, f.changeTime(p, first))
		}
	}
}

func TestHistoryLoadsThroughTheCorpus(t *testing.T) {
	t.Parallel()
	sites, err := loadHistory(corpus.Dir(), false)
	if errors.Is(err, os.ErrNotExist) && os.Getenv("CI") != "true" {
		t.Skipf("%v; the corpus is shared/corpus beside the repository", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sites {
		if len(s.snapshots) == 0 || len(s.snapshots) != len(s.links) || len(s.links[0]) == 0 {
			t.Errorf("site %s: %d snapshots, %d link lists, %d links in the first", s.name, len(s.snapshots), len(s.links), len(s.links[0]))
		}
	}
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// localLinks points every link to another host at a path of the page's own
// host, and leaves links on the page's host and other attributes alone.
func TestLocalLinks(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`<a href="https://www.bbc.com/news/a?x=1">`, `<a href="/x/www.bbc.com/news/a?x=1">`},
		{`<a HREF='http://example.com/'>`, `<a HREF='/x/example.com/'>`},
		{`<a href=//cdn.example.org/s>`, `<a href=/x/cdn.example.org/s>`},
		{`<a href = "HTTPS://X.example/">`, `<a href = "/x/X.example/">`},
		{`<a href="/local/path">`, `<a href="/local/path">`},
		{`<img src="https://img.example/p.jpg"><a href="rel/x">`, `<img src="https://img.example/p.jpg"><a href="rel/x">`},
	} {
		if got := string(localLinks([]byte(tt.in))); got != tt.want {
			t.Errorf("localLinks(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// A -gzip farm's page, read by the crawler's own client, is the plain
// farm's page byte for byte, its -vary-bodies comment included: the
// second gzip member is part of the body.
func TestGzipFarmServesThePlainBodyCoded(t *testing.T) {
	t.Parallel()
	f := synthFarm(t, 1, testShape)
	f.varyBodies = true
	client, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	read := func() fetch.Result {
		t.Helper()
		res, err := client.Fetch(t.Context(), fetch.Request{URL: f.pages[0].url, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := read()
	f.gzip = true
	coded := read()
	if coded.Capture == nil || coded.Capture.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("the -gzip farm's answer is not gzip-coded: capture %+v", coded.Capture)
	}
	if len(coded.Capture.Body) >= len(coded.HTML)/2 {
		t.Errorf("the coded body is %d bytes of %d decoded: not compressed", len(coded.Capture.Body), len(coded.HTML))
	}
	// Each fetch's comment names its own fetch number, 1 then 2.
	want := bytes.Replace(plain.HTML, []byte("<!-- fetch 1 -->"), []byte("<!-- fetch 2 -->"), 1)
	if !bytes.Equal(coded.HTML, want) {
		t.Errorf("the decoded body (%d bytes) differs from the plain one (%d)", len(coded.HTML), len(plain.HTML))
	}
}
