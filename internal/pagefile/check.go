package pagefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// checker checks rows one at a time as Check and ReadChecked do: through
// registration, and against the rows before (a URL given twice). It
// remembers each URL's first row and the bad rows.
type checker struct {
	pol   registration.Policy
	first map[string]int // a normalised URL → the row it is first on
	bad   []RowError
}

func newChecker(pol registration.Policy) *checker {
	return &checker{pol: pol, first: map[string]int{}}
}

// refuse records a bad row, its message cut to maxErrorBytes.
func (c *checker) refuse(line int, err error) {
	c.bad = append(c.bad, RowError{Line: line, Err: shortError(err)})
}

// check returns row's page as registration admits it, or false when the
// row is bad (recorded), or an error when it could not be checked (a name
// lookup failed, ctx ended). The caller remembers a good page's URL, as it
// keeps it.
func (c *checker) check(ctx context.Context, row Row) (watch.PageSpec, bool, error) {
	if row.Err != nil {
		c.refuse(row.Line, row.Err)
		return watch.PageSpec{}, false, nil
	}
	p, err := c.pol.CheckPage(ctx, row.Page)
	var refused *watch.RefusedError
	switch {
	case errors.As(err, &refused):
		c.refuse(row.Line, err)
		return watch.PageSpec{}, false, nil
	case err != nil:
		return watch.PageSpec{}, false, fmt.Errorf("row %d: %w", row.Line, err)
	}
	if line, ok := c.first[p.URL]; ok {
		c.refuse(row.Line, fmt.Errorf("%s is also on row %d", p.URL, line))
		return watch.PageSpec{}, false, nil
	}
	return p, true, nil
}

// remember records that url is first on row line.
func (c *checker) remember(url string, line int) { c.first[url] = line }

// err returns a *BadRowsError naming every bad row in row order, or nil.
func (c *checker) err() error {
	if len(c.bad) == 0 {
		return nil
	}
	slices.SortStableFunc(c.bad, func(a, b RowError) int { return a.Line - b.Line })
	return &BadRowsError{Rows: c.bad}
}

// Check puts every row through pol (as watchctl add and the API do) and
// refuses rows whose URL is already registered (registered reports it) or
// given twice. It returns a *BadRowsError naming every bad row, or another
// error when a row could not be checked (a DNS failure, ctx ended).
func Check(ctx context.Context, pol registration.Policy, rows []Row, registered func(url string) bool) ([]watch.PageSpec, error) {
	c := newChecker(pol)
	var out []watch.PageSpec
	for _, row := range rows {
		p, ok, err := c.check(ctx, row)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		c.remember(p.URL, row.Line)
		if registered(p.URL) {
			c.refuse(row.Line, fmt.Errorf("%s is already watched", p.URL))
			continue
		}
		out = append(out, p)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// List is a list read and checked row by row (ReadChecked): its good pages,
// each packed in one string and 80 bytes, and its bad rows. A
// watch.PageSpec costs 248 bytes and 16 an item of its lists besides their
// text, which for MaxRows pages at the domain's caps (130 items each) is
// 23 MB: an import holds its pages packed and hands them to the store
// unpacked one at a time (Pages).
type List struct {
	pages []packedPage
	bad   []RowError
	bytes int // the text of pages, at most MaxCheckedBytes
}

// ReadChecked reads a list in format from r as Read does and checks each
// row as it is read, as Check does, holding only the good pages, packed,
// and the bad rows, never the list's rows. It returns an *UnreadableError
// for a list it cannot read, or an error wrapping the failure of a row
// that could not be checked (a DNS failure, ctx ended); bad rows are
// reported by the List's Err, once RefuseWatched has had its say.
func ReadChecked(ctx context.Context, pol registration.Policy, r io.Reader, format string) (*List, error) {
	rd, err := NewReader(r, format)
	if err != nil {
		return nil, err
	}
	c := newChecker(pol)
	l := &List{}
	for {
		row, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p, ok, err := c.check(ctx, row)
		if err != nil {
			rd.discard()
			return nil, err
		}
		if !ok {
			continue
		}
		page := pack(row.Line, p)
		// The map and the page share the packed URL: it is held once.
		c.remember(page.url(), row.Line)
		if l.bytes += len(page.text); l.bytes > MaxCheckedBytes {
			rd.discard()
			return nil, &UnreadableError{Err: fmt.Errorf("row %d: the pages up to here take more than %d bytes once checked "+
				"(a URL's non-ASCII characters take three bytes each once percent-encoded): import the list in parts", row.Line, MaxCheckedBytes)}
		}
		l.pages = append(l.pages, page)
	}
	l.bad = c.bad
	return l, nil
}

// Len returns how many good pages l holds.
func (l *List) Len() int { return len(l.pages) }

// URLs returns the normalised URL of each good page, in row order.
func (l *List) URLs() []string {
	urls := make([]string, len(l.pages))
	for i, p := range l.pages {
		urls[i] = p.url()
	}
	return urls
}

// RefuseWatched makes a bad row of each good page whose URL is in watched,
// the URLs registered already.
func (l *List) RefuseWatched(watched []string) {
	if len(watched) == 0 {
		return
	}
	set := make(map[string]bool, len(watched))
	for _, u := range watched {
		set[u] = true
	}
	for _, p := range l.pages {
		if set[p.url()] {
			l.bad = append(l.bad, RowError{Line: p.line, Err: shortError(fmt.Errorf("%s is already watched", p.url()))})
		}
	}
}

// Err returns a *BadRowsError naming every bad row in row order, or nil
// when every row is good.
func (l *List) Err() error {
	c := checker{bad: l.bad}
	return c.err()
}

// Pages yields the good pages in row order, each unpacked as it is
// yielded: a consumer that keeps none holds one at a time.
func (l *List) Pages() iter.Seq[watch.PageSpec] {
	return func(yield func(watch.PageSpec) bool) {
		for _, p := range l.pages {
			if !yield(p.unpack()) {
				return
			}
		}
	}
}

// packedPage is a checked page in one string and a few words: text holds
// its URL, its name and its eight lists (listsOf) end to end, ends where
// each of them ends, a list's items joined by line breaks. An item never
// holds one: the reader split the lists at line breaks, and a tag holds
// letters, digits, '-' and '_'. TestPackKeepsEveryField fails when
// watch.PageSpec gains a field that pack does not keep.
type packedPage struct {
	line     int
	text     string
	ends     [10]uint32
	interval time.Duration
	flags    packedFlags
	headers  []watch.Header // few and short: a list carries no secret
	sources  []string       // three words at most
	proxy    string
	waitFor  string
	// renderAllow are the hosts beyond the site a rendered page may load
	// from: at most watch.MaxRenderAllow once checked.
	renderAllow []string
}

type packedFlags uint8

const (
	packedPaused packedFlags = 1 << iota
	packedBurstDetectionOff
	packedSameSiteOnly
	packedArticlesOff
	packedRender
)

// listsOf returns the lists of s that packedPage joins, in its order.
func listsOf(s *watch.PageSpec) [8]*[]string {
	o := &s.Options
	return [8]*[]string{&s.Tags, &o.Ignore, &o.Within, &o.Exclude, &o.IncludeText, &o.ExcludeText, &o.IncludeURL, &o.ExcludeURL}
}

// pack packs s into a string of its own, which holds none of the record
// or token s was read from.
func pack(line int, s watch.PageSpec) packedPage {
	p := packedPage{line: line, interval: s.Interval, proxy: strings.Clone(s.Proxy)}
	for _, f := range []struct {
		on   bool
		flag packedFlags
	}{{s.Paused, packedPaused}, {s.BurstDetectionOff, packedBurstDetectionOff}, {s.Options.SameSiteOnly, packedSameSiteOnly},
		{s.ArticlesOff, packedArticlesOff}, {s.Render, packedRender}} {
		if f.on {
			p.flags |= f.flag
		}
	}
	var b strings.Builder
	n := len(s.URL) + len(s.Name)
	for _, l := range listsOf(&s) {
		for _, item := range *l {
			n += len(item) + 1
		}
	}
	b.Grow(n)
	b.WriteString(s.URL)
	p.ends[0] = uint32(b.Len())
	b.WriteString(s.Name)
	p.ends[1] = uint32(b.Len())
	for i, l := range listsOf(&s) {
		for j, item := range *l {
			if j > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(item)
		}
		p.ends[i+2] = uint32(b.Len())
	}
	p.text = b.String()
	p.waitFor = strings.Clone(s.WaitFor)
	for _, h := range s.Headers {
		// Strings of their own, as the text is.
		p.headers = append(p.headers, watch.Header{Name: strings.Clone(h.Name), Value: strings.Clone(h.Value), Sealed: strings.Clone(h.Sealed)})
	}
	for _, src := range s.Sources {
		p.sources = append(p.sources, strings.Clone(src))
	}
	for _, h := range s.RenderAllow {
		p.renderAllow = append(p.renderAllow, strings.Clone(h))
	}
	return p
}

// part returns part i of p's text.
func (p packedPage) part(i int) string {
	start := uint32(0)
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.text[start:p.ends[i]]
}

func (p packedPage) url() string { return p.part(0) }

// unpack returns the page p packed; an empty list comes back nil.
func (p packedPage) unpack() watch.PageSpec {
	s := watch.PageSpec{URL: p.url(), Name: p.part(1), Interval: p.interval,
		Paused: p.flags&packedPaused != 0, BurstDetectionOff: p.flags&packedBurstDetectionOff != 0,
		ArticlesOff: p.flags&packedArticlesOff != 0, Headers: p.headers, Proxy: p.proxy,
		Render: p.flags&packedRender != 0, WaitFor: p.waitFor, RenderAllow: p.renderAllow}
	s.Options.SameSiteOnly = p.flags&packedSameSiteOnly != 0
	s.Sources = p.sources
	for i, l := range listsOf(&s) {
		if t := p.part(i + 2); t != "" {
			*l = strings.Split(t, "\n")
		}
	}
	return s
}
