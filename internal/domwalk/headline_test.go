package domwalk_test

import (
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
)

// TestHeadline holds the choice of a link's text and summary among the
// anchors of one story: picture, headline, teaser, comment count.
func TestHeadline(t *testing.T) {
	tests := []struct {
		name          string
		page          string
		text, summary string
	}{
		{"teaser before the heading loses",
			`<article><p><a href="/x">Vier Jahre lang kämpfte Don Leonardo Guerri für seine Glocken</a></p>
			<div><div><h2><a href="/x">In Florenz: Priester muss zahlen</a></h2></div></div></article>`,
			"In Florenz: Priester muss zahlen", "Vier Jahre lang kämpfte Don Leonardo Guerri für seine Glocken"},
		{"anchor deep in a heading",
			`<p><a href="/x">A long teaser sentence that is longer than the headline</a></p><h3><span><b><a href="/x">Headline</a></b></span></h3>`,
			"Headline", "A long teaser sentence that is longer than the headline"},
		{"role=heading counts",
			`<a href="/x">The teaser, which is long</a><div role="heading" aria-level="2"><a href="/x">Headline</a></div>`,
			"Headline", "The teaser, which is long"},
		{"heading inside a card anchor; the rest is the summary",
			`<a href="/x"><figure><img alt="Picture"></figure><h1><span>Headline</span></h1><p>Teaser text.</p><footer>12 Kommentare</footer></a>`,
			"Headline", "Teaser text. 12 Kommentare"},
		{"an anchor that is a heading",
			`<a href="/x">A longer teaser, met first</a><a href="/x" role="heading">Headline</a>`,
			"Headline", "A longer teaser, met first"},
		{"first headline wins",
			`<h2><a href="/x">First headline</a></h2><h3><a href="/x">A second, longer headline</a></h3>`,
			"First headline", "A second, longer headline"},
		{"a heading beats a longer own text met later",
			`<h4><a href="/x">Short</a></h4><a href="/x">A much longer teaser</a>`,
			"Short", "A much longer teaser"},
		{"without a heading the first own text wins",
			`<a href="/x">Headline</a><a href="/x">A longer teaser text</a>`,
			"Headline", "A longer teaser text"},
		{"breadth-first: a shallower anchor is met first",
			`<div><div><ul><li><a href="/x">1 Kommentar</a></li></ul></div><a href="/x">Headline</a></div>`,
			"Headline", "1 Kommentar"},
		{"empty heading is no headline",
			`<a href="/x"><h2><img alt="Logo"></h2>Story text</a>`,
			"Story text", ""},
		{"credit under the picture is not the text",
			`<a href="/x"><figure><img alt="Olaf Scholz"><figcaption>Foto: dpa</figcaption></figure></a><a href="/x" title="">Kanzler</a>`,
			"Kanzler", ""},
		{"a credit loses to the image's alt",
			`<a href="/x"><img alt="Olaf Scholz"><span>© Reuters</span></a>`,
			"Olaf Scholz", ""},
		{"a credit is the text when nothing else is",
			`<a href="/x"><img><span>© Reuters</span></a>`,
			"© Reuters", ""},
		{"credits are never a summary",
			`<a href="/x"><img alt="A"><span>Foto: dpa</span></a><a href="/x">Story</a>`,
			"Story", ""},
		{"fallback attributes are never a summary",
			`<a href="/x"><img alt="A long picture description"></a><a href="/x">Story</a>`,
			"Story", ""},
		{"same text twice is no summary",
			`<a href="/x">Story</a><h2><a href="/x">Story</a></h2>`,
			"Story", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := parse(t, tt.page, domwalk.Limits{})
			if len(got) != 1 || got[0].Text != tt.text || got[0].Summary != tt.summary {
				t.Fatalf("links %v, want one with text %v and summary %v", got, tt.text, tt.summary)
			}
			// The flat reader, used for pages the parser refuses, finds the
			// same headline for <h1>-<h6>; it cannot see role="heading",
			// and it meets anchors in document order, not breadth-first.
			if strings.Contains(tt.page, "role=") || strings.HasPrefix(tt.name, "breadth-first") {
				return
			}
			flat, stats := parse(t, strings.Repeat("<div>", 600)+tt.page, domwalk.Limits{})
			if !stats.Flattened {
				t.Fatalf("page not flattened: %+v", stats)
			}
			if len(flat) != 1 || flat[0].Text != tt.text {
				t.Fatalf("flat reader: links %v, want one with text %v", flat, tt.text)
			}
		})
	}
}

func TestIsCredit(t *testing.T) {
	tests := []struct {
		text, alt string
		want      bool
	}{
		{"Foto: dpa", "", true},
		{"FOTO: Imago", "", true},
		{"Photo: AP", "", true},
		{"Photos: Getty Images", "", true},
		{"© Reuters", "", true},
		{"(c) AFP", "", true},
		{"Copyright 2022 Example", "", true},
		{"(Bild: picture alliance)", "", true},
		{"[Foto: dpa]", "", true},
		{"Credit: Jane Doe", "", true},
		{"Olaf Scholz Foto: dpa", "Olaf Scholz", true},
		{"Olaf Scholz (Bild: heise)", "Olaf Scholz", true},
		{"Olaf Scholz", "Olaf Scholz", false},
		{"Fotostrecke: Die schönsten Bilder", "", false},
		{"Bildung: Schulen öffnen", "", false},
		{"Photographer wins award", "", false},
		{"Olaf Scholz: Foto: dpa-Interview", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := domwalk.IsCredit(tt.text, tt.alt); got != tt.want {
			t.Errorf("IsCredit(%q, %q) = %v, want %v", tt.text, tt.alt, got, tt.want)
		}
	}
}
