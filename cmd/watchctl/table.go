package main

import (
	"bytes"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// table lays out tab-separated cells in columns, as text/tabwriter does,
// but measures each cell by the columns a terminal gives it: a Chinese or
// Japanese character and most emoji take two, which tabwriter counts as
// one, and headlines in those scripts broke its columns apart.
type table struct {
	w   io.Writer
	buf bytes.Buffer
}

func newTable(w io.Writer) *table { return &table{w: w} }

// Write takes lines of cells separated by tabs; nothing is written before
// Flush.
func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush writes the lines with each column as wide as its widest cell plus
// two spaces; a line's last cell is not padded.
func (t *table) Flush() error {
	lines := strings.Split(strings.TrimSuffix(t.buf.String(), "\n"), "\n")
	t.buf.Reset()
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	rows := make([][]string, len(lines))
	var widths []int
	for i, line := range lines {
		rows[i] = strings.Split(line, "\t")
		for j, cell := range rows[i][:len(rows[i])-1] {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], runewidth.StringWidth(cell))
		}
	}
	var out strings.Builder
	for _, row := range rows {
		for j, cell := range row {
			out.WriteString(cell)
			if j < len(row)-1 {
				out.WriteString(strings.Repeat(" ", widths[j]-runewidth.StringWidth(cell)+2))
			}
		}
		out.WriteString("\n")
	}
	_, err := io.WriteString(t.w, out.String())
	return err
}
