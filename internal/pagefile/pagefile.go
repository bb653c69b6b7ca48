// Package pagefile reads and writes lists of watched pages as CSV and OPML,
// for watchctl import/export and the HTTP API, and checks an import as one:
// every row goes through registration, and a list with any bad row is
// refused whole, each bad row named with its reason.
//
// A list is read as a stream, one row at a time (a Reader): CSV record by
// record, OPML token by token, never as a tree. The caps below are counted
// and measured while reading, so a list costs memory in proportion to one
// row, and the reader stops at the first cap a list passes, with a message
// that names the row.
package pagefile

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Formats.
const (
	CSV  = "csv"
	OPML = "opml"
)

// Caps on one import. A list that passes MaxBytes, MaxRows, MaxRowBytes,
// MaxColumns (its header), MaxFolderDepth or MaxCheckedBytes is refused as
// a whole as soon as the reader gets there; a row that passes
// MaxCellBytes, MaxColumns, MaxRowTags or MaxListItems is a bad row, named
// with the others.
const (
	// MaxRows bounds one import: the reader stops at page MaxRows+1.
	MaxRows = 10000
	// MaxBytes bounds the size of one import's file.
	MaxBytes = 8 << 20
	// MaxCheckedBytes bounds the text of a list's pages once checked
	// (ReadChecked): URLs normalised, names, tags and lists. A URL's
	// non-ASCII characters take three times their bytes once percent-encoded,
	// so a file within MaxBytes could otherwise hold three times as much.
	MaxCheckedBytes = MaxBytes
	// MaxRowBytes bounds one CSV row (its quotes and line breaks included)
	// and one token of an OPML file (a tag with its attributes, a text, a
	// comment), as the parser reads them. A page at every cap of the domain
	// (a 2 KiB URL, 20 tags, five lists of 20 patterns of 256 bytes, ten
	// selectors) takes about 35 KiB; 128 KiB leaves room for quoting.
	MaxRowBytes = 128 << 10
	// MaxCellBytes bounds each cell (CSV) or attribute (OPML) the reader
	// uses. The longest value a page holds is a list of 20 patterns of 256
	// bytes (5,139 bytes with their line breaks); a URL is at most 2 KiB
	// once normalised.
	MaxCellBytes = 8 << 10
	// MaxColumns bounds the cells of a CSV header or row: the list has 14
	// columns, and a spreadsheet may add a few of its own.
	MaxColumns = 64
	// MaxFolderDepth bounds how deep OPML folders nest. Each folder a page
	// sits in becomes one of its tags, and a page has at most watch.MaxTags
	// (20), so a page under more folders than that could only be imported
	// with their names repeated; feed readers nest one to three deep.
	MaxFolderDepth = 32
	// MaxRowTags bounds the tags one row names as written (a CSV row's tags
	// cell; an OPML page's folders and categories), repeats included: twice
	// watch.MaxTags, so that the domain names an ordinary excess in its own
	// words and the reader stops only an absurd one.
	MaxRowTags = 2 * watch.MaxTags
	// MaxListItems bounds the items of one list cell or attribute (ignore
	// patterns, region selectors, keyword rules): twice
	// watch.MaxIgnorePatterns, the longest list the domain admits, for the
	// same reason.
	MaxListItems = 2 * watch.MaxIgnorePatterns
)

// maxElementDepth bounds how deep any OPML element nests: the folders, with
// opml, body, the page's outline and a few levels below it that the reader
// skips.
const maxElementDepth = MaxFolderDepth + 8

// maxErrorBytes bounds the message of one bad row, so that an answer naming
// 10,000 of them stays a few MiB however long the values it quotes; a longer
// message keeps its head and its tail, where the reason usually is
// ("<url>: <what is wrong with it>").
const (
	maxErrorBytes = 300
	errorHead     = 100
)

// csvHeader names the CSV columns, in order. tags are separated by spaces;
// ignore patterns, region selectors and keyword rules by line breaks
// (inside the quoted cell). A list may leave out any column but url, and
// older lists, written before regions and keyword rules, have none of them:
// a missing column takes the default (no list; burst detection on;
// articles on, as for any page registered now). headers holds a page's
// request headers, "Name: value" a line, never a secret one (Cookie,
// Authorization…): a list is a file people pass on. proxy names the proxy
// of the operator's list the page is fetched through, empty for none.
// render says the page is checked in headless Chromium (default false),
// wait_for is the CSS selector its renderer waits for. sources holds what
// the page is watched through, comma-separated (homepage,feeds,sitemaps);
// empty is the homepage alone. render_allow holds the hosts beyond its
// site a rendered page may load from, separated by spaces or commas.
var csvHeader = []string{"url", "name", "tags", "interval", "enabled", "same_site", "ignore",
	"within", "exclude", "include_text", "exclude_text", "include_url", "exclude_url", "burst_detection", "articles", "headers",
	"render", "wait_for", "proxy", "sources", "render_allow"}

// FormatOf picks the format from a file name's extension (.csv; .opml or
// .xml), or returns an error naming the choices.
func FormatOf(name string) (string, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return CSV, nil
	case ".opml", ".xml":
		return OPML, nil
	}
	return "", fmt.Errorf("%s: cannot tell the format from the extension: use .csv or .opml, or name the format", name)
}

// Row is one page of a list, as read.
type Row struct {
	Line int // where the row starts in the file (CSV line, or OPML outline number)
	// Page is the row's page as the list gives it, its lists split but
	// not checked: Check does that.
	Page watch.PageSpec
	// Err says why the row could not be read (a bad interval, say); Check
	// reports it with the rows registration refuses.
	Err error
}

// RowError is a bad row: where and why.
type RowError struct {
	Line int
	Err  error
}

func (e RowError) Error() string { return fmt.Sprintf("row %d: %v", e.Line, e.Err) }

// BadRowsError lists every bad row of a list; nothing of it was written.
type BadRowsError struct{ Rows []RowError }

func (e *BadRowsError) Error() string { return e.Summary(len(e.Rows)) }

// Summary is Error with at most n rows named, and how many more there are:
// for an answer that names every row elsewhere.
func (e *BadRowsError) Summary(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d bad rows, nothing imported", len(e.Rows))
	for _, r := range e.Rows[:min(n, len(e.Rows))] {
		b.WriteString("\n")
		b.WriteString(r.Error())
	}
	if more := len(e.Rows) - n; more > 0 {
		fmt.Fprintf(&b, "\n… and %d more", more)
	}
	return b.String()
}

// UnreadableError is a list that cannot be read at all: not CSV or OPML,
// over a cap of the whole list, or empty. Its message is Err's.
type UnreadableError struct{ Err error }

func (e *UnreadableError) Error() string { return e.Err.Error() }
func (e *UnreadableError) Unwrap() error { return e.Err }

// errRowTooLong is what rowBudget answers once a row has used its bytes.
var errRowTooLong = errors.New("row too long")

// rowBudget is the reader under a format's parser. It hands over at most
// MaxRowBytes between two calls of reset (the parser's own read-ahead, 4 KiB,
// comes on top), so no row, attribute, text or comment can grow the parser's
// buffers past that before the reader sees it.
type rowBudget struct {
	r    io.Reader
	left int
}

func (b *rowBudget) reset() { b.left = MaxRowBytes }

func (b *rowBudget) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errRowTooLong
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= n
	return n, err
}

// Reader reads a list one row at a time, holding no more than the row it
// returns. It is not safe for concurrent use.
type Reader struct {
	lr   *io.LimitedReader
	next func() (Row, error) // the format's: io.EOF after the last row
	rows int
	err  error // the first error returned, returned again
}

// NewReader returns a Reader of the list r holds in format, or an error
// naming the formats. Reading starts with the first call of Next.
func NewReader(r io.Reader, format string) (*Reader, error) {
	lr := &io.LimitedReader{R: r, N: MaxBytes + 1}
	budget := &rowBudget{r: lr}
	rd := &Reader{lr: lr}
	switch format {
	case CSV:
		rd.next = newCSVReader(budget).next
	case OPML:
		rd.next = newOPMLReader(budget).next
	default:
		return nil, fmt.Errorf("unknown format %q: want csv or opml", format)
	}
	return rd, nil
}

// Next returns the next row, io.EOF after the last one, or an
// *UnreadableError when the list cannot be read: a syntax error, page
// MaxRows+1, a row over MaxRowBytes, a CSV header over MaxColumns, folders
// deeper than MaxFolderDepth, no page at all. Once the list has proven
// unreadable the rest of r is read and dropped (up to MaxBytes, through a
// small buffer), so that a file over MaxBytes is refused as such whatever
// else is wrong with it, and an HTTP client gets its answer after sending
// its whole body. A row that cannot be read on its own (a bad interval, a
// cell over MaxCellBytes) comes with its Err set.
func (rd *Reader) Next() (Row, error) {
	if rd.err != nil {
		return Row{}, rd.err
	}
	row, err := rd.next()
	switch {
	case err == nil && rd.rows == MaxRows:
		err = fmt.Errorf("more than %d pages: import at most %d at a time", MaxRows, MaxRows)
	case err == io.EOF && rd.rows == 0:
		err = errors.New("the list holds no page")
	}
	if err != nil && err != io.EOF {
		rd.discard()
	}
	if rd.lr.N <= 0 {
		err = fmt.Errorf("the list is larger than %d bytes", MaxBytes)
	}
	if err != nil {
		if err != io.EOF {
			err = &UnreadableError{Err: err}
		}
		rd.err = err
		return Row{}, err
	}
	rd.rows++
	return row, nil
}

// discard reads the rest of the list, up to MaxBytes+1, and drops it; an
// error reading on changes nothing: the list is refused already.
func (rd *Reader) discard() { io.Copy(io.Discard, rd.lr) }

// Read reads a whole list in format, at most MaxRows pages from at most
// MaxBytes, in file order. A row it cannot read (a bad interval, say) comes
// with its Err set, for Check to report with the others; a list it cannot
// read at all gives an *UnreadableError (see Reader.Next). The rows it
// returns are held whole; ReadChecked holds a checked list in less.
func Read(r io.Reader, format string) ([]Row, error) {
	rd, err := NewReader(r, format)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for {
		row, err := rd.Next()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
}

// settings are a row's cells (CSV) or attributes (OPML) after its URL,
// name and tags, as written: lists one item a line, booleans as
// strconv.ParseBool reads them, empty for the default.
type settings struct {
	Interval, Enabled, SameSite, BurstDetection, Articles                     string
	Ignore, Within, Exclude, IncludeText, ExcludeText, IncludeURL, ExcludeURL string
	Headers, Proxy, Sources                                                   string
	Render, WaitFor, RenderAllow                                              string
}

func makeRow(line int, url, name string, tags []string, s settings) (Row, error) {
	row := Row{Line: line, Page: watch.PageSpec{URL: url, Name: name, Tags: tags, Interval: watch.DefaultInterval}}
	if url == "" {
		return Row{}, errors.New("no url")
	}
	if s.Interval != "" {
		d, err := time.ParseDuration(s.Interval)
		if err != nil {
			return Row{}, fmt.Errorf("interval %s: want a duration such as 5m", quoteShort(s.Interval))
		}
		row.Page.Interval = d
	}
	o := &row.Page.Options
	enabled, burstDetection, articles := true, true, true
	for _, b := range []struct {
		name, v string
		dst     *bool
	}{{"enabled", s.Enabled, &enabled}, {"same_site", s.SameSite, &o.SameSiteOnly},
		{"burst_detection", s.BurstDetection, &burstDetection}, {"articles", s.Articles, &articles},
		{"render", s.Render, &row.Page.Render}} {
		if b.v == "" {
			continue
		}
		v, err := strconv.ParseBool(b.v)
		if err != nil {
			return Row{}, fmt.Errorf("%s %s: want true or false", b.name, quoteShort(b.v))
		}
		*b.dst = v
	}
	row.Page.Paused, row.Page.BurstDetectionOff, row.Page.ArticlesOff = !enabled, !burstDetection, !articles
	row.Page.WaitFor = s.WaitFor
	// Registration checks the hosts; here they are only split.
	row.Page.RenderAllow = watch.SplitRenderAllow(s.RenderAllow)
	// Registration checks the lists' contents; here they are only split.
	for _, l := range []struct {
		name, cell string
		dst        *[]string
	}{{"ignore", s.Ignore, &o.Ignore}, {"within", s.Within, &o.Within}, {"exclude", s.Exclude, &o.Exclude},
		{"include_text", s.IncludeText, &o.IncludeText}, {"exclude_text", s.ExcludeText, &o.ExcludeText},
		{"include_url", s.IncludeURL, &o.IncludeURL}, {"exclude_url", s.ExcludeURL, &o.ExcludeURL}} {
		items, ok := splitUpTo(l.cell, "\n", MaxListItems)
		if !ok {
			return Row{}, fmt.Errorf("%s holds more than %d items: a list has at most %d", l.name, MaxListItems, watch.MaxIgnorePatterns)
		}
		*l.dst = items
	}
	if strings.TrimSpace(s.Sources) != "" {
		sources, err := watch.ParseSources(strings.ReplaceAll(s.Sources, " ", ","))
		if err != nil {
			return Row{}, fmt.Errorf("sources %s: %w", quoteShort(s.Sources), err)
		}
		row.Page.Sources = sources
	}
	items, ok := splitUpTo(s.Headers, "\n", watch.MaxHeaders)
	if !ok {
		return Row{}, fmt.Errorf("headers holds more than %d: a page sends at most %d", watch.MaxHeaders, watch.MaxHeaders)
	}
	for _, item := range items {
		h, err := watch.ParseHeader(item)
		if err != nil {
			return Row{}, err
		}
		if h.Secret() {
			return Row{}, fmt.Errorf("header %s is a secret, which a list never carries: set it with `watchctl set ID --header` or the API once the page is added", h.Name)
		}
		row.Page.Headers = append(row.Page.Headers, h)
	}
	// Whether the deployment has the proxy is registration's to say.
	row.Page.Proxy = strings.TrimSpace(s.Proxy)
	return row, nil
}

// headerLines are the headers of a page a list carries, "Name: value" a
// line: those in clear, never a secret.
func headerLines(hs []watch.Header) string {
	public := watch.PublicHeaders(hs)
	out := make([]string, len(public))
	for i, h := range public {
		out[i] = h.Name + ": " + h.Value
	}
	return strings.Join(out, "\n")
}

// splitUpTo splits s at sep into its items, trimmed, empty ones dropped, or
// reports false when there are more than max, without making them.
func splitUpTo(s, sep string, max int) ([]string, bool) {
	var items []string
	for item := range strings.SplitSeq(s, sep) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if len(items) == max {
			return nil, false
		}
		items = append(items, item)
	}
	return items, true
}

// fieldsUpTo is strings.Fields that reports false when s holds more than
// max fields, without making them.
func fieldsUpTo(s string, max int) ([]string, bool) {
	var fields []string
	for f := range strings.FieldsSeq(s) {
		if len(fields) == max {
			return nil, false
		}
		fields = append(fields, f)
	}
	return fields, true
}

// cellTooLong is the error of a cell or attribute over MaxCellBytes.
func cellTooLong(what string, n int) error {
	return fmt.Errorf("%s is %d bytes long: the longest read is %d", what, n, MaxCellBytes)
}

// quoteShort quotes a value for a message, cut to 40 characters: enough to
// recognise it, never a cell's worth.
func quoteShort(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	cut := 0
	for range max {
		_, n := utf8.DecodeRuneInString(s[cut:])
		cut += n
	}
	return strconv.Quote(s[:cut]) + "…"
}

// shortError returns err, or for a message over maxErrorBytes an error of
// its first errorHead bytes and its last, "…" between, cut at characters.
func shortError(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrorBytes {
		return err
	}
	head, tail := errorHead, len(msg)-(maxErrorBytes-errorHead)
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return errors.New(msg[:head] + "…" + msg[tail:])
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
