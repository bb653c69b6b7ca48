package pagefile

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// opmlReader reads an OPML list one token at a time, under a rowBudget,
// keeping only the path to where it is: the kinds of the elements open and
// the texts of the folders open. An outline without a URL is a folder, as
// feed readers write them: its text becomes a tag of the pages inside it.
// An outline with one is a page. Outlines inside a page, and elements other
// than opml, body and outline, are skipped (with their depth still capped).
type opmlReader struct {
	budget  *rowBudget
	d       *xml.Decoder
	open    []elementKind // the elements open, outermost first
	folders []string      // the texts of the folders open, outermost first
	n       int           // the outlines begun, folders included: a row's number
	started bool          // the <opml> element was seen
}

type elementKind uint8

const (
	skipped elementKind = iota
	root
	body
	folder
	page
)

func newOPMLReader(budget *rowBudget) *opmlReader {
	return &opmlReader{budget: budget, d: xml.NewDecoder(budget)}
}

// next reads on to the next page (or bad folder) and returns its row.
func (o *opmlReader) next() (Row, error) {
	for {
		o.budget.reset()
		tok, err := o.d.Token()
		if err != nil {
			return Row{}, o.readError(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			row, isRow, err := o.start(t)
			if err != nil || isRow {
				return row, err
			}
		case xml.EndElement: // the decoder has matched it with its start
			last := len(o.open) - 1
			if o.open[last] == folder {
				o.folders = o.folders[:len(o.folders)-1]
			}
			o.open = o.open[:last]
			if last == 0 {
				return Row{}, io.EOF // the document ends with its root, whatever follows
			}
		}
	}
}

func (o *opmlReader) readError(err error) error {
	line, _ := o.d.InputPos()
	switch {
	case err == io.EOF && !o.started:
		return errors.New("read OPML: the file has no <opml> element")
	case err == io.EOF:
		return io.EOF
	case errors.Is(err, errRowTooLong):
		return fmt.Errorf("OPML line %d: a tag, text or comment is longer than %d bytes: an outline takes a few KiB at most", line, MaxRowBytes)
	}
	return fmt.Errorf("read OPML: %w", err)
}

// start opens element t and returns its row when it is a page (or a
// folder that cannot be read), or an error that ends the list.
func (o *opmlReader) start(t xml.StartElement) (row Row, isRow bool, err error) {
	depth := len(o.open)
	if depth == maxElementDepth {
		line, _ := o.d.InputPos()
		return Row{}, false, fmt.Errorf("OPML line %d: elements nest deeper than %d", line, maxElementDepth)
	}
	parent := skipped
	if depth > 0 {
		parent = o.open[depth-1]
	}
	kind := skipped
	switch name := t.Name.Local; {
	case depth == 0:
		if name != "opml" {
			return Row{}, false, fmt.Errorf("read OPML: the root element is %s, not opml", quoteShort(name))
		}
		kind, o.started = root, true
	case parent == root && name == "body":
		kind = body
	case (parent == body || parent == folder) && name == "outline":
		o.n++
		a := readOutline(t.Attr)
		if firstNonEmpty(a.url, a.htmlURL, a.xmlURL) != "" {
			kind, row, isRow = page, o.page(a), true
			break
		}
		if len(o.folders) == MaxFolderDepth {
			return Row{}, false, fmt.Errorf("row %d: folders nest deeper than %d: each folder becomes a tag of the pages inside it, and a page has at most %d tags",
				o.n, MaxFolderDepth, watch.MaxTags)
		}
		kind = folder
		if a.long != nil {
			// The folder is a bad row; its pages go on without its tag.
			row, isRow = Row{Line: o.n, Err: a.long}, true
		}
		o.folders = append(o.folders, a.text)
	}
	o.open = append(o.open, kind)
	return row, isRow, nil
}

// page makes the row of a page's outline, its folders' texts its first tags.
func (o *opmlReader) page(a outlineAttrs) Row {
	if a.long != nil {
		return Row{Line: o.n, Err: a.long}
	}
	var tags []string
	for _, f := range o.folders {
		if strings.TrimSpace(f) != "" {
			tags = append(tags, f)
		}
	}
	cats, ok := splitUpTo(a.category, ",", MaxRowTags-len(tags))
	if !ok {
		return Row{Line: o.n, Err: fmt.Errorf("its folders and categories name more than %d tags: a page has at most %d", MaxRowTags, watch.MaxTags)}
	}
	for _, c := range cats {
		tags = append(tags, strings.Trim(c, "/"))
	}
	url := firstNonEmpty(a.url, a.htmlURL, a.xmlURL)
	// Another program's OPML names a page by the outline's text.
	name := a.text
	if a.hasName {
		name = a.name
	} else if name == url {
		name = ""
	}
	row, err := makeRow(o.n, url, name, tags, a.settings)
	if err != nil {
		return Row{Line: o.n, Err: err}
	}
	return row
}

// outlineAttrs are the attributes of an outline the reader uses: those
// Write writes (see outline), by their local names.
type outlineAttrs struct {
	text, url, htmlURL, xmlURL string
	category                   string // comma-separated, as written
	name                       string
	hasName                    bool // pwName was given, if empty
	settings
	long error // says which attribute is over MaxCellBytes
}

func readOutline(attrs []xml.Attr) outlineAttrs {
	var a outlineAttrs
	for _, at := range attrs {
		var dst *string
		switch at.Name.Local {
		case "text":
			dst = &a.text
		case "url":
			dst = &a.url
		case "htmlUrl":
			dst = &a.htmlURL
		case "xmlUrl":
			dst = &a.xmlURL
		case "category":
			dst = &a.category
		case "pwName":
			dst, a.hasName = &a.name, true
		case "pwInterval":
			dst = &a.Interval
		case "pwEnabled":
			dst = &a.Enabled
		case "pwSameSite":
			dst = &a.SameSite
		case "pwBurstDetection":
			dst = &a.BurstDetection
		case "pwArticles":
			dst = &a.Articles
		case "pwIgnore":
			dst = &a.Ignore
		case "pwWithin":
			dst = &a.Within
		case "pwExclude":
			dst = &a.Exclude
		case "pwIncludeText":
			dst = &a.IncludeText
		case "pwExcludeText":
			dst = &a.ExcludeText
		case "pwIncludeUrl":
			dst = &a.IncludeURL
		case "pwExcludeUrl":
			dst = &a.ExcludeURL
		case "pwHeaders":
			dst = &a.Headers
		case "pwSources":
			dst = &a.Sources
		case "pwProxy":
			dst = &a.Proxy
		case "pwRender":
			dst = &a.Render
		case "pwWaitFor":
			dst = &a.WaitFor
		case "pwRenderAllow":
			dst = &a.RenderAllow
		default:
			continue
		}
		if len(at.Value) > MaxCellBytes {
			if a.long == nil {
				a.long = cellTooLong("the "+at.Name.Local+" attribute", len(at.Value))
			}
			continue
		}
		*dst = at.Value
	}
	s := &a.settings
	for _, v := range []*string{&s.Interval, &s.Enabled, &s.SameSite, &s.BurstDetection, &s.Articles, &s.Render, &s.WaitFor} {
		*v = strings.TrimSpace(*v)
	}
	return a
}
