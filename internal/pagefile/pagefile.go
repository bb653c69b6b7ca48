// Package pagefile reads and writes lists of watched pages as CSV and OPML,
// for watchctl import/export and the HTTP API, and checks an import as one:
// every row goes through registration, and a list with any bad row is
// refused whole, each bad row named with its reason.
package pagefile

import (
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Formats.
const (
	CSV  = "csv"
	OPML = "opml"
)

// MaxRows bounds one import; a longer list is refused as a whole.
const MaxRows = 10000

// MaxBytes bounds the size of one import's file.
const MaxBytes = 8 << 20

// csvHeader names the CSV columns, in order. tags are separated by spaces;
// ignore patterns, region selectors and keyword rules by line breaks
// (inside the quoted cell). A list may leave out any column but url, and
// older lists, written before regions and keyword rules, have none of them:
// a missing column takes the default (no list; burst detection on).
var csvHeader = []string{"url", "name", "tags", "interval", "enabled", "same_site", "ignore",
	"within", "exclude", "include_text", "exclude_text", "include_url", "exclude_url", "burst_detection"}

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

// Write writes pages in format (CSV or OPML).
func Write(w io.Writer, format string, pages []watch.Page) error {
	switch format {
	case CSV:
		cw := csv.NewWriter(w)
		cw.Write(csvHeader)
		for _, p := range pages {
			o := p.Options
			cw.Write([]string{p.BaseURL, p.Name, strings.Join(p.Tags, " "), p.Interval.String(),
				strconv.FormatBool(p.Enabled), strconv.FormatBool(o.SameSiteOnly), lines(o.Ignore),
				lines(o.Within), lines(o.Exclude), lines(o.IncludeText), lines(o.ExcludeText), lines(o.IncludeURL), lines(o.ExcludeURL),
				strconv.FormatBool(p.BurstDetection)})
		}
		cw.Flush()
		return cw.Error()
	case OPML:
		doc := opml{Version: "2.0", Title: "portalwatch pages"}
		for _, p := range pages {
			po := p.Options
			o := outline{Text: p.DisplayName(), Type: "link", URL: p.BaseURL, Interval: p.Interval.String(),
				SameSite: po.SameSiteOnly, Ignore: lines(po.Ignore), Within: lines(po.Within), Exclude: lines(po.Exclude),
				IncludeText: lines(po.IncludeText), ExcludeText: lines(po.ExcludeText),
				IncludeURL: lines(po.IncludeURL), ExcludeURL: lines(po.ExcludeURL)}
			if !p.Enabled {
				o.Enabled = "false"
			}
			if !p.BurstDetection {
				o.BurstDetection = "false"
			}
			// Always written, so that an empty name (the page is shown by
			// its title or host, the outline's text) comes back empty.
			o.Name = &p.Name
			for _, t := range p.Tags {
				o.Category = append(o.Category, "/"+t)
			}
			doc.Outlines = append(doc.Outlines, o)
		}
		if _, err := io.WriteString(w, xml.Header); err != nil {
			return err
		}
		enc := xml.NewEncoder(w)
		enc.Indent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("write OPML: %w", err)
		}
		_, err := io.WriteString(w, "\n")
		return err
	}
	return fmt.Errorf("unknown format %q: want csv or opml", format)
}

type opml struct {
	XMLName  xml.Name  `xml:"opml"`
	Version  string    `xml:"version,attr"`
	Title    string    `xml:"head>title"`
	Outlines []outline `xml:"body>outline"`
}

// outline is an OPML 2.0 outline of type "link"; the pw-prefixed
// attributes carry what OPML has no word for. Other readers ignore them.
type outline struct {
	Text     string  `xml:"text,attr"`
	Type     string  `xml:"type,attr,omitempty"`
	URL      string  `xml:"url,attr,omitempty"`
	HTMLURL  string  `xml:"htmlUrl,attr,omitempty"`
	XMLURL   string  `xml:"xmlUrl,attr,omitempty"`
	Category catList `xml:"category,attr,omitempty"`
	Name     *string `xml:"pwName,attr,omitempty"` // nil: absent, as in other programs' OPML
	Interval string  `xml:"pwInterval,attr,omitempty"`
	Enabled  string  `xml:"pwEnabled,attr,omitempty"`
	SameSite bool    `xml:"pwSameSite,attr,omitempty"`
	Ignore   string  `xml:"pwIgnore,attr,omitempty"`
	// Regions and keyword rules, one selector or pattern a line (the
	// encoder writes a line break in an attribute as &#xA;, so it survives).
	Within         string    `xml:"pwWithin,attr,omitempty"`
	Exclude        string    `xml:"pwExclude,attr,omitempty"`
	IncludeText    string    `xml:"pwIncludeText,attr,omitempty"`
	ExcludeText    string    `xml:"pwExcludeText,attr,omitempty"`
	IncludeURL     string    `xml:"pwIncludeUrl,attr,omitempty"`
	ExcludeURL     string    `xml:"pwExcludeUrl,attr,omitempty"`
	BurstDetection string    `xml:"pwBurstDetection,attr,omitempty"` // written only as "false"
	Children       []outline `xml:"outline"`
}

// lines joins a list as its cell or attribute holds it.
func lines(l []string) string { return strings.Join(l, "\n") }

// catList is OPML's comma-separated category list.
type catList []string

func (c catList) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strings.Join(c, ",")}, nil
}

func (c *catList) UnmarshalXMLAttr(a xml.Attr) error {
	for _, s := range strings.Split(a.Value, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*c = append(*c, s)
		}
	}
	return nil
}

// RowError is a bad row: where and why.
type RowError struct {
	Line int
	Err  error
}

func (e RowError) Error() string { return fmt.Sprintf("row %d: %v", e.Line, e.Err) }

// BadRowsError lists every bad row of a list; nothing of it was written.
type BadRowsError struct{ Rows []RowError }

func (e *BadRowsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d bad rows, nothing imported", len(e.Rows))
	for _, r := range e.Rows {
		b.WriteString("\n")
		b.WriteString(r.Error())
	}
	return b.String()
}

// Read reads a list in format, at most MaxRows pages from at most MaxBytes.
// A row it cannot read (a bad interval, say) comes with its Err set, for
// Check to report with the others; a file it cannot read at all gives an
// error.
func Read(r io.Reader, format string) ([]Row, error) {
	lr := &io.LimitedReader{R: r, N: MaxBytes + 1}
	var (
		rows []Row
		bad  []RowError
		err  error
	)
	switch format {
	case CSV:
		rows, bad, err = readCSV(lr)
	case OPML:
		rows, bad, err = readOPML(lr)
	default:
		return nil, fmt.Errorf("unknown format %q: want csv or opml", format)
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("the list is larger than %d bytes", MaxBytes)
	}
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		rows = append(rows, Row{Line: b.Line, Err: b.Err})
	}
	slices.SortFunc(rows, func(a, b Row) int { return a.Line - b.Line })
	if len(rows) > MaxRows {
		return nil, fmt.Errorf("the list has %d pages: at most %d are imported at once", len(rows), MaxRows)
	}
	if len(rows) == 0 {
		return nil, errors.New("the list holds no page")
	}
	return rows, nil
}

func readCSV(r io.Reader) ([]Row, []RowError, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("read CSV header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	if _, ok := col["url"]; !ok {
		return nil, nil, fmt.Errorf("the CSV header %q has no url column (columns: %s)", strings.Join(header, ","), strings.Join(csvHeader, ","))
	}
	var (
		rows []Row
		bad  []RowError
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, fmt.Errorf("CSV line %d: %w", pe.Line, pe.Err)
			}
			return nil, nil, fmt.Errorf("read CSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		row, err := makeRow(line, get("url"), get("name"), strings.Fields(get("tags")), settings{
			Interval: get("interval"), Enabled: get("enabled"), SameSite: get("same_site"), BurstDetection: get("burst_detection"),
			Ignore: get("ignore"), Within: get("within"), Exclude: get("exclude"), IncludeText: get("include_text"),
			ExcludeText: get("exclude_text"), IncludeURL: get("include_url"), ExcludeURL: get("exclude_url")})
		if err != nil {
			bad = append(bad, RowError{Line: line, Err: err})
			continue
		}
		rows = append(rows, row)
	}
	return rows, bad, nil
}

func readOPML(r io.Reader) ([]Row, []RowError, error) {
	var doc opml
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("read OPML: %w", err)
	}
	var (
		rows []Row
		bad  []RowError
		n    int
	)
	// An outline without a URL is a folder, as feed readers write them:
	// its text becomes a tag of the pages inside it.
	var walk func(os []outline, folders []string)
	walk = func(os []outline, folders []string) {
		for _, o := range os {
			n++
			url := firstNonEmpty(o.URL, o.HTMLURL, o.XMLURL)
			if url == "" {
				walk(o.Children, append(folders, o.Text))
				continue
			}
			tags := append([]string(nil), folders...)
			for _, c := range o.Category {
				tags = append(tags, strings.Trim(c, "/"))
			}
			// Another program's OPML names a page by the outline's text.
			name := o.Text
			if o.Name != nil {
				name = *o.Name
			} else if name == url {
				name = ""
			}
			row, err := makeRow(n, url, name, tags, settings{Interval: o.Interval, Enabled: o.Enabled,
				SameSite: strconv.FormatBool(o.SameSite), BurstDetection: o.BurstDetection, Ignore: o.Ignore, Within: o.Within,
				Exclude: o.Exclude, IncludeText: o.IncludeText, ExcludeText: o.ExcludeText, IncludeURL: o.IncludeURL,
				ExcludeURL: o.ExcludeURL})
			if err != nil {
				bad = append(bad, RowError{Line: n, Err: err})
				continue
			}
			rows = append(rows, row)
		}
	}
	walk(doc.Outlines, nil)
	return rows, bad, nil
}

// settings are a row's cells (CSV) or attributes (OPML) after its URL,
// name and tags, as written: lists one item a line, booleans as
// strconv.ParseBool reads them, empty for the default.
type settings struct {
	Interval, Enabled, SameSite, BurstDetection                               string
	Ignore, Within, Exclude, IncludeText, ExcludeText, IncludeURL, ExcludeURL string
}

func makeRow(line int, url, name string, tags []string, s settings) (Row, error) {
	row := Row{Line: line, Page: watch.PageSpec{URL: url, Name: name, Tags: tags, Interval: watch.DefaultInterval}}
	if url == "" {
		return Row{}, errors.New("no url")
	}
	if s.Interval != "" {
		d, err := time.ParseDuration(s.Interval)
		if err != nil {
			return Row{}, fmt.Errorf("interval %q: want a duration such as 5m", s.Interval)
		}
		row.Page.Interval = d
	}
	o := &row.Page.Options
	enabled, burstDetection := true, true
	for _, b := range []struct {
		name, v string
		dst     *bool
	}{{"enabled", s.Enabled, &enabled}, {"same_site", s.SameSite, &o.SameSiteOnly},
		{"burst_detection", s.BurstDetection, &burstDetection}} {
		if b.v == "" {
			continue
		}
		v, err := strconv.ParseBool(b.v)
		if err != nil {
			return Row{}, fmt.Errorf("%s %q: want true or false", b.name, b.v)
		}
		*b.dst = v
	}
	row.Page.Paused, row.Page.BurstDetectionOff = !enabled, !burstDetection
	// Registration checks the lists' contents; here they are only split.
	for _, l := range []struct {
		cell string
		dst  *[]string
	}{{s.Ignore, &o.Ignore}, {s.Within, &o.Within}, {s.Exclude, &o.Exclude}, {s.IncludeText, &o.IncludeText},
		{s.ExcludeText, &o.ExcludeText}, {s.IncludeURL, &o.IncludeURL}, {s.ExcludeURL, &o.ExcludeURL}} {
		for _, item := range strings.Split(l.cell, "\n") {
			if item = strings.TrimSpace(item); item != "" {
				*l.dst = append(*l.dst, item)
			}
		}
	}
	return row, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// Check puts every row through pol (as watchctl add and the API do) and
// refuses rows whose URL is already registered (registered reports it) or
// given twice. It returns a *BadRowsError naming every bad row, or another
// error when a row could not be checked (a DNS failure, ctx ended).
func Check(ctx context.Context, pol registration.Policy, rows []Row, registered func(url string) bool) ([]watch.PageSpec, error) {
	var (
		out   []watch.PageSpec
		bad   []RowError
		first = map[string]int{}
	)
	for _, row := range rows {
		if row.Err != nil {
			bad = append(bad, RowError{Line: row.Line, Err: row.Err})
			continue
		}
		p, err := pol.CheckPage(ctx, row.Page)
		var refused *watch.RefusedError
		switch {
		case errors.As(err, &refused):
			bad = append(bad, RowError{Line: row.Line, Err: err})
			continue
		case err != nil:
			return nil, fmt.Errorf("row %d: %w", row.Line, err)
		}
		if line, ok := first[p.URL]; ok {
			bad = append(bad, RowError{Line: row.Line, Err: fmt.Errorf("%s is also on row %d", p.URL, line)})
			continue
		}
		first[p.URL] = row.Line
		if registered(p.URL) {
			bad = append(bad, RowError{Line: row.Line, Err: fmt.Errorf("%s is already watched", p.URL)})
			continue
		}
		out = append(out, p)
	}
	if len(bad) > 0 {
		return nil, &BadRowsError{Rows: bad}
	}
	return out, nil
}
