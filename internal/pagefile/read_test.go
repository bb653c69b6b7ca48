package pagefile

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// The tests of this file use Read alone, and the caps as numbers, so that
// they run against the reader of before issue 26 as well (which fails them).

// allocated returns the bytes f allocates, all goroutines counted: the test
// runs nothing else meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// fillTo repeats row until the list is as long as it can be within
// MaxBytes (with tail after it).
func fillTo(head, row, tail string) string {
	n := (MaxBytes - len(head) - len(tail)) / len(row)
	return head + strings.Repeat(row, n) + tail
}

// TestReadStopsAtPageMaxRowsPlusOne: a list of millions of pages is refused
// at page 10,001, having made no more than a few of them: today's reader
// (issue 26) made every one before counting, 459 MB for 1 MB of CSV.
func TestReadStopsAtPageMaxRowsPlusOne(t *testing.T) {
	for format, list := range map[string]string{
		CSV:  fillTo("url\n", "a\n", ""),
		OPML: fillTo("<opml><body>", `<outline url="a"/>`, "</body></opml>"),
	} {
		var err error
		n := allocated(func() { _, err = Read(strings.NewReader(list), format) })
		if err == nil || !strings.Contains(err.Error(), "more than 10000 pages: import at most 10000 at a time") {
			t.Errorf("%s of %d bytes: %v, want refused at page 10001", format, len(list), err)
		}
		// 10,000 rows (Read holds them, 7 MB with its slice's growth) and
		// the work of reading them; today's reader makes millions.
		if n > 32<<20 {
			t.Errorf("%s of %d bytes: reading to the refusal allocated %d MiB", format, len(list), n>>20)
		}
	}
}

// TestReadRefusesDeepFolders: OPML folders nest at most 32 deep, counted as
// they open; 9,990 levels, accepted before, are refused at the 33rd folder.
func TestReadRefusesDeepFolders(t *testing.T) {
	nested := func(folders int) string {
		return "<opml><body>" + strings.Repeat(`<outline text="f">`, folders) + `<outline url="http://127.0.0.1:9/a"/>` +
			strings.Repeat("</outline>", folders) + "</body></opml>"
	}
	rows, err := Read(strings.NewReader(nested(32)), OPML)
	if err != nil || len(rows) != 1 || rows[0].Line != 33 || len(rows[0].Page.Tags) != 32 {
		t.Fatalf("32 folders: %+v %v, want the page as row 33 with a tag a folder", rows, err)
	}
	for _, folders := range []int{33, 9990} {
		_, err := Read(strings.NewReader(nested(folders)), OPML)
		if err == nil || !strings.Contains(err.Error(), "row 33: folders nest deeper than 32") {
			t.Errorf("%d folders: %v, want refused at row 33", folders, err)
		}
	}
	// Elements other than outlines are skipped, their depth still capped.
	deep := "<opml><body>" + strings.Repeat("<x>", 1000) + strings.Repeat("</x>", 1000) + `<outline url="http://127.0.0.1:9/a"/></body></opml>`
	if _, err := Read(strings.NewReader(deep), OPML); err == nil || !strings.Contains(err.Error(), "elements nest deeper than") {
		t.Errorf("1000 nested elements: %v, want refused", err)
	}
	// The document ends with its root, as xml.Unmarshal read it.
	rows, err = Read(strings.NewReader(nested(1)+"<trailing>"), OPML)
	if err != nil || len(rows) != 1 {
		t.Errorf("a document with something after its root: %+v %v", rows, err)
	}
}

// TestReadBoundsRowsAndCells: what one row may hold is capped as it is read
// (a 128 KiB row or XML token ends the list; a cell or attribute over
// 8 KiB, more than 64 cells, 40 tags or 40 items a list make a bad row),
// and each refusal names its row or line.
func TestReadBoundsRowsAndCells(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	items := func(n int, sep string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint("i", i)
		}
		return strings.Join(s, sep)
	}
	page := "http://127.0.0.1:9/a"
	opml := func(outline string) string { return "<opml><body>" + outline + "</body></opml>" }
	for _, tt := range []struct {
		name, format, list string
		refused            string // the list is unreadable, saying this
		badRow             int    // else this row is bad,
		why                string // saying this
	}{
		{"a row over 128 KiB", CSV, "url,ignore\n" + page + `,"` + long(200<<10) + "\"\n", "row 2 is longer than 131072 bytes", 0, ""},
		{"a header over 128 KiB", CSV, "url," + long(200<<10) + "\n" + page + "\n", "read CSV header: row 1 is longer than", 0, ""},
		{"a header of 65 columns", CSV, "url" + strings.Repeat(",x", 64) + "\n" + page + "\n", "the CSV header has 65 columns", 0, ""},
		{"a row of 65 cells", CSV, "url\n" + page + "\n" + page + strings.Repeat(",", 64) + "\n", "", 3, "65 cells: a row has at most 64"},
		{"a cell over 8 KiB", CSV, "url,ignore\n" + page + "," + long(9000) + "\n", "", 2, "the ignore cell is 9000 bytes long"},
		{"41 tags", CSV, "url,tags\n" + page + "," + items(41, " ") + "\n", "", 2, "more than 40 tags"},
		{"41 patterns", CSV, "url,include_text\n" + page + `,"` + items(41, "\n") + "\"\n", "", 2, "include_text holds more than 40 items"},
		{"an XML token over 128 KiB", OPML, opml(`<outline url="` + page + `" pwIgnore="` + long(200<<10) + `"/>`), "OPML line 1: a tag, text or comment is longer than", 0, ""},
		{"a comment over 128 KiB", OPML, opml("<!--" + long(200<<10) + "-->"), "OPML line 1: a tag, text or comment is longer than", 0, ""},
		{"an attribute over 8 KiB", OPML, opml(`<outline url="` + page + `" pwExcludeUrl="` + long(9000) + `"/>`), "", 1, "the pwExcludeUrl attribute is 9000 bytes long"},
		{"a folder's text over 8 KiB", OPML, opml(`<outline text="` + long(9000) + `"><outline url="` + page + `"/></outline>`), "", 1, "the text attribute is 9000 bytes long"},
		{"41 categories", OPML, opml(`<outline url="` + page + `" category="` + items(41, ",") + `"/>`), "", 1, "more than 40 tags"},
		{"folders and categories over 40", OPML, opml(strings.Repeat(`<outline text="f">`, 30) + `<outline url="` + page + `" category="` + items(11, ",") + `"/>` +
			strings.Repeat("</outline>", 30)), "", 31, "more than 40 tags"},
	} {
		rows, err := Read(strings.NewReader(tt.list), tt.format)
		if tt.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tt.refused) {
				t.Errorf("%s: %v, want refused with %q", tt.name, err, tt.refused)
			}
			continue
		}
		var bad *Row
		for i := range rows {
			if rows[i].Line == tt.badRow {
				bad = &rows[i]
			}
		}
		if err != nil || bad == nil || bad.Err == nil || !strings.Contains(bad.Err.Error(), tt.why) {
			t.Errorf("%s: rows %+v, %v; want row %d bad with %q", tt.name, rows, err, tt.badRow, tt.why)
		}
	}
}

// TestReadMessagesQuoteValuesShort: a bad value is quoted cut, never whole.
func TestReadMessagesQuoteValuesShort(t *testing.T) {
	rows, err := Read(strings.NewReader("url,interval\nhttp://127.0.0.1:9/a,"+strings.Repeat("x", 5000)+"\n"), CSV)
	if err != nil || len(rows) != 1 || rows[0].Err == nil {
		t.Fatalf("%+v %v", rows, err)
	}
	if msg := rows[0].Err.Error(); len(msg) > 200 || !strings.Contains(msg, `interval "xxxx`) || !strings.Contains(msg, "want a duration") {
		t.Errorf("the message of a 5000-byte interval: %d bytes, %.300q", len(msg), msg)
	}
}
