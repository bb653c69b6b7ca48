package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestTableAlignsWideCharacters: the columns after a CJK or emoji cell
// start where they do after a Latin one, as a terminal shows them.
func TestTableAlignsWideCharacters(t *testing.T) {
	var out strings.Builder
	tw := newTable(&out)
	fmt.Fprintln(tw, "PAGE\tTEXT\tURL")
	fmt.Fprintln(tw, "1 Ministry\tNew decree\thttps://ministry.example/a")
	fmt.Fprintln(tw, "2 新华网\t北京发布新规定\thttps://news.example/b")
	fmt.Fprintln(tw, "3 Café 🎉\tÜberschrift 🎉\thttps://cafe.example/c")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		i := strings.Index(line, "http")
		if strings.HasPrefix(line, "PAGE") {
			i = strings.Index(line, "URL")
		}
		at = append(at, runewidth.StringWidth(line[:i]))
	}
	for _, a := range at[1:] {
		if a != at[0] {
			t.Fatalf("the URL column starts at display columns %v:\n%s", at, out.String())
		}
	}
}
