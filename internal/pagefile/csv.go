package pagefile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// csvReader reads a CSV list one record at a time, under a rowBudget: the
// encoding/csv reader holds a whole record before it returns it, so the
// budget, not the reader, is what keeps a record of a million cells or one
// 8 MiB cell from being made.
type csvReader struct {
	budget *rowBudget
	cr     *csv.Reader
	col    map[string]int // a column's lower-cased name → its index; nil until the header is read
	line   int            // the line the last record read starts on
}

func newCSVReader(budget *rowBudget) *csvReader {
	cr := csv.NewReader(budget)
	// A row may have fewer cells than the header: lists written by hand
	// leave their empty trailing cells out, and always could. MaxRowBytes
	// and MaxColumns bound a row instead.
	cr.FieldsPerRecord = -1
	// A row's cells are strings of their own, which outlive the slice.
	cr.ReuseRecord = true
	return &csvReader{budget: budget, cr: cr}
}

// read reads one record within MaxRowBytes.
func (c *csvReader) read() ([]string, error) {
	c.budget.reset()
	rec, err := c.cr.Read()
	switch {
	case err == nil:
		c.line, _ = c.cr.FieldPos(0)
		return rec, nil
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, errRowTooLong):
		where := fmt.Sprintf("the row after row %d", c.line)
		if len(rec) > 0 { // the cells read so far, where the row starts
			line, _ := c.cr.FieldPos(0)
			where = fmt.Sprintf("row %d", line)
		} else if c.col == nil {
			where = "the header"
		}
		return nil, fmt.Errorf("%s is longer than %d bytes: a page's row takes a few KiB at most", where, MaxRowBytes)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("CSV line %d: %w", pe.Line, pe.Err)
	}
	return nil, fmt.Errorf("read CSV: %w", err)
}

func (c *csvReader) readHeader() error {
	header, err := c.read()
	if err == io.EOF {
		return errors.New("read CSV header: the file is empty")
	}
	if err != nil {
		return fmt.Errorf("read CSV header: %w", err)
	}
	if len(header) > MaxColumns {
		return fmt.Errorf("the CSV header has %d columns: at most %d are read (columns: %s)", len(header), MaxColumns, strings.Join(csvHeader, ","))
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	if _, ok := col["url"]; !ok {
		return fmt.Errorf("the CSV header %s has no url column (columns: %s)", quoteShort(strings.Join(header, ",")), strings.Join(csvHeader, ","))
	}
	c.col = col
	return nil
}

// next reads the next row, the header first.
func (c *csvReader) next() (Row, error) {
	if c.col == nil {
		if err := c.readHeader(); err != nil {
			return Row{}, err
		}
	}
	rec, err := c.read()
	if err != nil {
		return Row{}, err
	}
	line := c.line
	if len(rec) > MaxColumns {
		return Row{Line: line, Err: fmt.Errorf("%d cells: a row has at most %d", len(rec), MaxColumns)}, nil
	}
	var long error // the first cell over MaxCellBytes
	get := func(name string) string {
		i, ok := c.col[name]
		if !ok || i >= len(rec) {
			return ""
		}
		v := strings.TrimSpace(rec[i])
		if len(v) > MaxCellBytes {
			if long == nil {
				long = cellTooLong("the "+name+" cell", len(v))
			}
			return ""
		}
		return v
	}
	url, name, tagCell := get("url"), get("name"), get("tags")
	s := settings{
		Interval: get("interval"), Enabled: get("enabled"), SameSite: get("same_site"), BurstDetection: get("burst_detection"),
		Articles: get("articles"),
		Ignore:   get("ignore"), Within: get("within"), Exclude: get("exclude"), IncludeText: get("include_text"),
		ExcludeText: get("exclude_text"), IncludeURL: get("include_url"), ExcludeURL: get("exclude_url"), Headers: get("headers"), Proxy: get("proxy"),
		Render: get("render"), WaitFor: get("wait_for"), Sources: get("sources"), RenderAllow: get("render_allow")}
	if long != nil {
		return Row{Line: line, Err: long}, nil
	}
	tags, ok := fieldsUpTo(tagCell, MaxRowTags)
	if !ok {
		return Row{Line: line, Err: fmt.Errorf("tags names more than %d tags: a page has at most %d", MaxRowTags, watch.MaxTags)}, nil
	}
	row, err := makeRow(line, url, name, tags, s)
	if err != nil {
		return Row{Line: line, Err: err}, nil
	}
	return row, nil
}
