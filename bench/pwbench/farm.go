package pwbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
)

// content is what one watched page serves, version after version. Version 0
// is what the page shows until the farm starts its rounds (the baseline);
// version v ≥ 1 appears at the page's change time of v.
type content interface {
	// contentType is the page's Content-Type header.
	contentType() string
	// render returns the page's body at version v. It is called once per
	// version a client asks for; the farm caches the result.
	render(v int) []byte
	// links returns the links of version v as portalwatch records them
	// (resolved and normalised URLs). Links that are on every version may
	// be left out: only differences from version 0 count.
	links(v int) []string
	// lastVersion is the last version there is, or -1 for no end.
	lastVersion() int
}

// farmPage is one page of the farm with what it has served.
type farmPage struct {
	content content
	url     string        // the page's URL as registered
	offset  time.Duration // its rounds' phase: pages do not all change at once
	// docs are the feed and news sitemap the page serves besides itself
	// (-sources), on its host.
	docs []*farmDoc

	mu       sync.Mutex
	cachedV  int
	cached   []byte
	zipped   []byte       // cached as one gzip member (-gzip), made once a version
	served   map[int]bool // versions served at least once
	lastSent time.Time
}

// farm serves pages on loopback addresses 127.0.1.1, 127.0.1.2…, each with
// its own port, so the crawler sees several hosts (robots.txt, connection
// pools) as it would on the web. Each page changes every round: its version
// goes up by one, and the harness knows the instant each version (and so each
// new link) starts being served.
type farm struct {
	pages  []*farmPage
	byKey  map[string]*farmPage // host:port + path
	docKey map[string]*farmDoc  // host:port + path of a page's feed or sitemap
	docOf  map[*farmDoc]*farmPage
	robots map[string]string // host:port → its robots.txt when it names sitemaps
	round  time.Duration
	start  atomic.Int64 // unix nanos when rounds began; 0 = still version 0
	freeze atomic.Int64 // unix nanos after which versions stop; 0 = not frozen
	fixed  atomic.Int64 // when > 0, every page is at version fixed-1 (manual rounds)

	fetches atomic.Int64 // homepage fetches
	bytes   atomic.Int64
	// docFetches counts the fetches of feeds and sitemaps, apart from the
	// homepages so that fetches/s means what it meant before -sources.
	docFetches atomic.Int64
	// hosts counts, per listener address, the page fetches it served and
	// how close together they came (pwbench polite).
	hosts map[string]*hostLog
	// varyBodies makes every response's body unique (a comment with the
	// fetch's number at its end), as a dynamic portal's are: no body is
	// ever the one a page's last check read.
	varyBodies bool
	// gzip serves homepages gzip-coded to a client that accepts it, as
	// nearly every portal does: each version compressed once (gzipMember),
	// a -vary-bodies comment appended as a second gzip member (RFC 1952
	// allows several; a decoder reads them as one body).
	gzip bool
	// zips holds gzip writers between members: a new one allocates its
	// compressor's tables, which cost the farm milliseconds of CPU a
	// fetch, taken from the programs it measures.
	zips sync.Pool
	// articles, when set, answers every path that is no page with a real
	// article page (for the extractor) instead of a 404.
	articles *articlePages

	listeners []net.Listener
	server    *http.Server
	wg        sync.WaitGroup
}

// listenFarm opens hosts loopback listeners. Addresses in 127.0.0.0/8 are all
// local on Linux, so no setup is needed.
func listenFarm(hosts int) ([]net.Listener, error) { return listenFarmPorts(hosts, hosts) }

// listenFarmPorts opens n loopback listeners spread over hosts addresses,
// each on its own port: one origin per page, as a page with its own news
// sitemap needs (robots.txt, which names sitemaps, is one per origin).
func listenFarmPorts(n, hosts int) ([]net.Listener, error) {
	var ls []net.Listener
	for i := range n {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.1.%d:0", 1+i%hosts))
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("listen on loopback: %w", err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// newFarm returns a farm for pages, which must already carry their URLs on
// the listeners' addresses.
func newFarm(ls []net.Listener, pages []*farmPage, round time.Duration) *farm {
	f := &farm{pages: pages, byKey: map[string]*farmPage{}, docKey: map[string]*farmDoc{}, docOf: map[*farmDoc]*farmPage{},
		robots: map[string]string{}, round: round, listeners: ls, hosts: map[string]*hostLog{}}
	for _, l := range ls {
		f.hosts[l.Addr().String()] = &hostLog{}
	}
	for i, p := range pages {
		p.served = map[int]bool{}
		p.cachedV = -1
		// Spread the pages' change times evenly over a round.
		p.offset = time.Duration(int64(round) * int64(i) / int64(len(pages)))
		host, path := splitURL(p.url)
		f.byKey[host+path] = p
		for _, d := range p.docs {
			f.docKey[host+d.path] = d
			f.docOf[d] = p
			if d.kind == kindSitemap {
				f.robots[host] += "Sitemap: http://" + host + d.path + "\n"
			}
		}
	}
	f.server = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	for _, l := range ls {
		f.wg.Go(func() { _ = f.server.Serve(l) })
	}
	return f
}

func splitURL(u string) (host, path string) {
	rest := u[len("http://"):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			return rest[:i], rest[i:]
		}
	}
	return rest, "/"
}

// Close stops serving.
func (f *farm) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.server.Shutdown(ctx); err != nil {
		f.server.Close()
	}
	f.wg.Wait()
}

// startRounds makes versions advance from now on.
func (f *farm) startRounds(now time.Time) { f.start.Store(now.UnixNano()) }

// stopRounds freezes every page at its current version.
func (f *farm) stopRounds(now time.Time) { f.freeze.Store(now.UnixNano()) }

// version returns the page's version at t.
func (f *farm) version(p *farmPage, t time.Time) int {
	if fixed := f.fixed.Load(); fixed > 0 {
		return int(fixed - 1)
	}
	start := f.start.Load()
	if start == 0 {
		return 0
	}
	now := t.UnixNano()
	if fr := f.freeze.Load(); fr != 0 && fr < now {
		now = fr
	}
	elapsed := now - start - int64(p.offset)
	if elapsed < 0 {
		return 0
	}
	v := int(elapsed/int64(f.round)) + 1
	if last := p.content.lastVersion(); last >= 0 && v > last {
		v = last
	}
	return v
}

// setVersion puts every page at version v from now on: rounds driven by
// the harness instead of the clock. Truth latencies are not kept then.
func (f *farm) setVersion(v int) { f.fixed.Store(int64(v) + 1) }

// changeTime is when version v ≥ 1 of the page started being served.
func (f *farm) changeTime(p *farmPage, v int) time.Time {
	return time.Unix(0, f.start.Load()+int64(p.offset)+int64(v-1)*int64(f.round))
}

func (f *farm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		io.WriteString(w, "User-agent: *\nAllow: /\n"+f.robots[r.Host])
		return
	}
	if d := f.docKey[r.Host+r.URL.Path]; d != nil {
		body := d.body(f.version(f.docOf[d], time.Now()))
		f.docFetches.Add(1)
		w.Header().Set("Content-Type", d.content.contentType())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		return
	}
	p := f.byKey[r.Host+r.URL.Path]
	if p == nil && f.articles != nil {
		f.articles.serve(w, r)
		return
	}
	if p == nil {
		http.NotFound(w, r)
		return
	}
	v := f.version(p, time.Now())
	p.mu.Lock()
	if p.cachedV != v {
		p.cached, p.cachedV, p.zipped = p.content.render(v), v, nil
	}
	coded := f.gzip && acceptsGzip(r)
	if coded && p.zipped == nil {
		p.zipped = f.gzipMember(p.cached)
	}
	body := p.cached
	if coded {
		body = p.zipped
	}
	p.served[v] = true
	p.lastSent = time.Now()
	p.mu.Unlock()
	n := f.fetches.Add(1)
	if h := f.hosts[r.Host]; h != nil {
		h.served(time.Now())
	}
	if f.varyBodies {
		comment := fmt.Appendf(nil, "\n<!-- fetch %d -->\n", n)
		if coded {
			comment = f.gzipMember(comment)
		}
		body = append(slices.Clip(body), comment...)
	}
	f.bytes.Add(int64(len(body)))
	if coded {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
	}
	w.Header().Set("Content-Type", p.content.contentType())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(body)
}

// acceptsGzip reports whether r's Accept-Encoding names gzip (a q=0 is
// not worth parsing here: the crawler never sends one).
func acceptsGzip(r *http.Request) bool {
	for _, coding := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(coding), ";")
		if strings.EqualFold(name, "gzip") {
			return true
		}
	}
	return false
}

// gzipMember is b as one gzip member at the fastest level, as a web
// server compressing dynamic pages on the fly sends it. Each page's
// versions change every round, so the farm compresses about one body a
// fetch: at the default level that took a third of the machine from the
// programs it measures (6 ms of CPU a check), at the fastest 0.6 ms.
func (f *farm) gzipMember(b []byte) []byte {
	var out bytes.Buffer
	zw, _ := f.zips.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(&out, gzip.BestSpeed)
	}
	zw.Reset(&out)
	_, _ = zw.Write(b) // to memory
	_ = zw.Close()
	f.zips.Put(zw)
	return out.Bytes()
}

// truthLink is a link portalwatch must report: new on its page since the
// baseline, in a version the page or one of its feeds and sitemaps served.
type truthLink struct {
	page       int
	url        string
	introduced time.Time // when the page or a source started serving it
	// sources are the kinds of the documents whose served versions hold
	// it: the update may name any of them, whichever was checked first.
	sources map[string]bool
}

// only returns the one source kind that holds the link, or "".
func (t truthLink) only() string {
	if len(t.sources) != 1 {
		return ""
	}
	for k := range t.sources {
		return k
	}
	return ""
}

// truth returns, per page, every link that some served version of the page
// or of its feeds and sitemaps holds and no version 0 (the baselines) does,
// with the moment it started being served: the change time of the first
// version of the run of versions, up to the first served one that holds it,
// in which it is present, the earliest over the documents.
func (f *farm) truth() []map[string]truthLink {
	out := make([]map[string]truthLink, len(f.pages))
	for i, p := range f.pages {
		p.mu.Lock()
		served := make([]int, 0, len(p.served))
		for v := range p.served {
			served = append(served, v)
		}
		p.mu.Unlock()
		docs := []docVersions{{kind: kindHomepage, content: p.content, served: served}}
		for _, d := range p.docs {
			docs = append(docs, docVersions{kind: d.kind, content: d.content, served: d.servedVersions()})
		}
		base := map[string]bool{}
		for j := range docs {
			for u := range docs[j].set(0) {
				base[u] = true
			}
		}
		want := map[string]truthLink{}
		for j := range docs {
			d := &docs[j]
			slices.Sort(d.served)
			for _, v := range d.served {
				if v == 0 {
					continue
				}
				for u := range d.set(v) {
					if base[u] {
						continue
					}
					first := v
					for first > 1 && d.set(first - 1)[u] {
						first--
					}
					at := f.changeTime(p, first)
					t, ok := want[u]
					if !ok {
						t = truthLink{page: i, url: u, introduced: at, sources: map[string]bool{}}
					}
					if at.Before(t.introduced) {
						t.introduced = at
					}
					t.sources[d.kind] = true
					want[u] = t
				}
			}
		}
		out[i] = want
	}
	return out
}

// docVersions is one document of a page (its homepage, feed or sitemap)
// with the versions it served and, memoised, their link sets.
type docVersions struct {
	kind    string
	content content
	served  []int
	sets    map[int]map[string]bool
}

func (d *docVersions) set(v int) map[string]bool {
	if s, ok := d.sets[v]; ok {
		return s
	}
	if d.sets == nil {
		d.sets = map[int]map[string]bool{}
	}
	s := map[string]bool{}
	for _, u := range d.content.links(v) {
		s[u] = true
	}
	d.sets[v] = s
	return s
}

// canonicaliser is implemented by content whose links portalwatch records
// in a page-specific spelling (such as replayed pages whose relative links
// resolve against each page's own URL).
type canonicaliser interface{ canon(url string) string }

// canon maps a URL from the updates table to the spelling of links().
func (p *farmPage) canon(u string) string {
	if c, ok := p.content.(canonicaliser); ok {
		return c.canon(u)
	}
	return u
}

// selfCheck parses a few pages of each kind at versions 0 and 1 with the
// product's own parser and checks that every link the truth counts on is
// found: a farm whose truth disagrees with the parser would report
// "missing" links that are the harness's fault.
func selfCheck(f *farm) error {
	for i := 0; i < len(f.pages) && i < 12; i++ {
		p := f.pages[i]
		u, err := url.Parse(p.url)
		if err != nil {
			return err
		}
		for v := range 2 {
			body, _ := fetch.DecodeHTML(p.content.render(v), p.content.contentType())
			links, _, err := domwalk.Parse(bytes.NewReader(body), u, domwalk.Limits{})
			if err != nil {
				return fmt.Errorf("self-check of %s: %w", p.url, err)
			}
			found := map[string]bool{}
			for _, l := range links {
				found[p.canon(l.URL)] = true
			}
			for _, want := range p.content.links(v) {
				if !found[want] {
					return fmt.Errorf("self-check of %s version %d: the parser does not find %s", p.url, v, want)
				}
			}
		}
	}
	return nil
}

// hostLog is what one farm host served: how many page fetches, and the
// gaps between consecutive ones, which politeness bounds from below.
type hostLog struct {
	mu      sync.Mutex
	fetches int
	last    time.Time
	gaps    []time.Duration
}

func (h *hostLog) served(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.last.IsZero() {
		h.gaps = append(h.gaps, at.Sub(h.last))
	}
	h.fetches++
	h.last = at
}

// snapshot returns the fetches so far and the gaps since the gap index
// from.
func (h *hostLog) snapshot(from int) (fetches int, gaps []time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fetches, slices.Clone(h.gaps[min(from, len(h.gaps)):])
}
