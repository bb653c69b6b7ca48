package crawler

import (
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// quotedLen must never undercount what the encoder writes, or a task could
// pass its budget.
func TestQuotedLen(t *testing.T) {
	for _, s := range []string{"", "abc", `"\`, "\n\r\t\b\f\x00\x1f\x7f", "<&>", "café", "\u2028\u2029", "caf\xe9\xff", "日本"} {
		b, err := json.MarshalWithOption(s, json.DisableHTMLEscape())
		if err != nil {
			t.Fatal(err)
		}
		if got := quotedLen(s); got < len(b) {
			t.Errorf("quotedLen(%q) = %d, under the %d bytes written (%s)", s, got, len(b), b)
		}
	}
}

// fitTask counts summaries: a task of links with long summaries, cut to a
// budget, still encodes within it.
func TestFitTaskCountsSummaries(t *testing.T) {
	links := make([]watch.Link, 200)
	for i := range links {
		links[i] = watch.Link{URL: "https://news.example/story/" + strings.Repeat("x", i%7), Text: "Headline",
			Summary: strings.Repeat("A teaser sentence that is longer than the headline. ", 4)}
	}
	task := watch.Task{BaseURL: "https://news.example/", ID: 1}
	const budget = 16 << 10
	kept, cut := fitTask(task, links, budget)
	if cut == 0 || len(kept)+cut != len(links) {
		t.Fatalf("kept %d, cut %d of %d; want some cut", len(kept), cut, len(links))
	}
	task.Context = kept
	b, err := watch.EncodeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > budget {
		t.Fatalf("task of %d links encodes to %d bytes, over the %d budget", len(kept), len(b), budget)
	}
}
