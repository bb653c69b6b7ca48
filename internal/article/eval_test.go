//go:build articleeval

package article

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/markusmobius/go-trafilatura"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// TestEval measures Extract against the evaluation sets in testdata (see
// testdata/README.md) beside the Go libraries it was compared with, each
// used directly: `make eval-articles`.
func TestEval(t *testing.T) {
	type result struct {
		body, date string
	}
	type extractor struct {
		name string
		run  func(page []byte, u *url.URL) result
	}
	extractors := []extractor{
		{"article (ours)", func(page []byte, u *url.URL) result {
			a, err := Extract(context.Background(), page, u, Options{})
			if err != nil {
				return result{}
			}
			return result{a.ArticleBody, a.DatePublished}
		}},
		{"go-trafilatura v1.12.2", func(page []byte, u *url.URL) result {
			// As the benchmark runs it: fallbacks on, dates by go-htmldate.
			doc, err := html.Parse(bytes.NewReader(page))
			if err != nil {
				return result{}
			}
			res, err := trafilatura.ExtractDocument(doc, trafilatura.Options{OriginalURL: u, EnableFallback: true})
			if err != nil || res == nil {
				return result{}
			}
			r := result{body: res.ContentText}
			if !res.Metadata.Date.IsZero() {
				r.date = res.Metadata.Date.Format(time.DateOnly)
			}
			return r
		}},
		{"readeck/go-readability v2.1.3", func(page []byte, u *url.URL) result {
			p := readability.NewParser()
			art, err := p.Parse(bytes.NewReader(page), u)
			if err != nil || art.Node == nil {
				return result{}
			}
			var b strings.Builder
			art.RenderText(&b)
			r := result{body: b.String()}
			if d, err := art.PublishedTime(); err == nil && !d.IsZero() {
				r.date = d.Format(time.DateOnly)
			}
			return r
		}},
	}

	// Body: scrapinghub's article-extraction-benchmark.
	var bodyTruth map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
	}
	readJSON(t, "testdata/scrapinghub/ground-truth.json", &bodyTruth)
	keys := sortedKeys(bodyTruth)
	fmt.Printf("\nscrapinghub/article-extraction-benchmark: body, %d pages\n", len(keys))
	fmt.Printf("%-32s %6s %9s %6s %9s\n", "", "F1", "precision", "recall", "ms/page")
	for _, ex := range extractors {
		var scores []tpFpFn
		var elapsed time.Duration
		for _, k := range keys {
			page := readPage(t, filepath.Join("testdata/scrapinghub/html", k+".html.gz"))
			u, _ := url.Parse(bodyTruth[k].URL)
			start := time.Now()
			r := ex.run(page, u)
			elapsed += time.Since(start)
			scores = append(scores, shingleMatch(bodyTruth[k].ArticleBody, r.body))
		}
		p, r, f := bodyScores(scores)
		fmt.Printf("%-32s %6.3f %9.3f %6.3f %9.1f\n", ex.name, f, p, r, float64(elapsed.Milliseconds())/float64(len(keys)))
	}

	// Dates: htmldate's evaluation pages (a sample of each set).
	var dateTruth map[string]struct {
		URL, Date, Set string
	}
	readJSON(t, "testdata/htmldate/ground-truth.json", &dateTruth)
	files := sortedKeys(dateTruth)
	for _, set := range []string{"default", "mediacloud", "all"} {
		var inSet []string
		for _, f := range files {
			if set == "all" || dateTruth[f].Set == set {
				inSet = append(inSet, f)
			}
		}
		fmt.Printf("\nhtmldate evaluation (%s): publication day, %d pages\n", set, len(inSet))
		fmt.Printf("%-32s %9s %7s %7s %9s\n", "", "accuracy", "right", "wrong", "none")
		for _, ex := range extractors {
			right, wrong, none := 0, 0, 0
			for _, f := range inSet {
				page := readPage(t, filepath.Join("testdata/htmldate/html", f+".gz"))
				u, _ := url.Parse(dateTruth[f].URL)
				d := ex.run(page, u).date
				switch {
				case d == "":
					none++
				case strings.HasPrefix(d, dateTruth[f].Date):
					right++
				default:
					wrong++
					if testing.Verbose() && strings.HasPrefix(ex.name, "article") && os.Getenv("EVAL_SHOW") != "" {
						fmt.Printf("  wrong %s: got %s want %s\n", f, d, dateTruth[f].Date)
					}
				}
			}
			fmt.Printf("%-32s %9.3f %7d %7d %9d\n", ex.name, float64(right)/float64(len(inSet)), right, wrong, none)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readPage reads a gzipped page and decodes it to UTF-8 as a crawler would:
// valid UTF-8 as it is, else BOM, then <meta charset>, then a guess.
func readPage(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if utf8.Valid(raw) {
		return raw
	}
	enc, _, _ := charset.DetermineEncoding(raw, "text/html")
	out, err := enc.NewDecoder().Bytes(raw)
	if err != nil {
		return raw
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
