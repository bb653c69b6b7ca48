package domwalk_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html/charset"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

// minHeadlineAgreement is the share of labelled new links whose recorded
// text must be the headline a reader sees.
const minHeadlineAgreement = 0.95

type headlineLabel struct {
	site     string
	step     int
	url      string
	headline string
}

func loadHeadlineLabels(t *testing.T) []headlineLabel {
	t.Helper()
	f, err := os.Open("testdata/headlines.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var labels []headlineLabel
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.HasPrefix(sc.Text(), "#") || sc.Text() == "" {
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 4 {
			t.Fatalf("testdata/headlines.tsv:%d: %d columns, want 4 (site, step, url, headline)", line, len(cols))
		}
		step, err := strconv.Atoi(cols[1])
		if err != nil {
			t.Fatalf("testdata/headlines.tsv:%d: step: %v", line, err)
		}
		labels = append(labels, headlineLabel{site: cols[0], step: step, url: cols[2], headline: cols[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return labels
}

// sameHeadline compares two texts with white space left out, so that the
// spacing around punctuation ("Wort :" against "Wort:") does not count.
func sameHeadline(a, b string) bool {
	squeeze := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return r
		}, s)
	}
	return squeeze(a) == squeeze(b)
}

// TestHeadlineAgreement measures, on new links of real homepage histories
// labelled by hand (testdata/headlines.tsv), how often the recorded text is
// the headline a person reads on the page.
func TestHeadlineAgreement(t *testing.T) {
	labels := loadHeadlineLabels(t)
	bySite := map[string][]headlineLabel{}
	var sites []string
	for _, l := range labels {
		if bySite[l.site] == nil {
			sites = append(sites, l.site)
		}
		bySite[l.site] = append(bySite[l.site], l)
	}
	if len(labels) < 150 || len(sites) < 2 {
		t.Fatalf("%d labels on %d sites; the set must keep at least 150 on at least 2", len(labels), len(sites))
	}
	agree := 0
	for _, site := range sites {
		snaps := corpus.History(t, site)
		texts := map[int]map[string]string{} // step -> URL -> text
		siteAgree := 0
		for _, l := range bySite[site] {
			if l.step >= len(snaps) {
				t.Fatalf("%s: label of %s names snapshot %d of %d", site, l.url, l.step, len(snaps))
			}
			if texts[l.step] == nil {
				s := snaps[l.step]
				r, err := charset.NewReader(bytes.NewReader(s.Body), s.ContentType)
				if err != nil {
					t.Fatalf("%s/%s: %v", site, s.Name, err)
				}
				page, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("%s/%s: %v", site, s.Name, err)
				}
				links, _ := domwalk.ParseBytes(page, s.URL, domwalk.Limits{})
				texts[l.step] = map[string]string{}
				for _, link := range links {
					texts[l.step][link.URL] = link.Text
				}
			}
			got, ok := texts[l.step][l.url]
			switch {
			case !ok:
				t.Errorf("%s snapshot %d: no link %s", site, l.step, l.url)
			case sameHeadline(got, l.headline):
				siteAgree++
			default:
				t.Logf("%s snapshot %d: %s\n\tgot  %q\n\twant %q", site, l.step, l.url, got, l.headline)
			}
		}
		t.Logf("%s: %d of %d headlines agree", site, siteAgree, len(bySite[site]))
		agree += siteAgree
	}
	share := float64(agree) / float64(len(labels))
	t.Logf("headline agreement %.3f (%d of %d)", share, agree, len(labels))
	if share < minHeadlineAgreement {
		t.Errorf("headline agreement %.3f, want at least %.2f", share, minHeadlineAgreement)
	}
}
