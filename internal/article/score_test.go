package article

import (
	"math"
	"strings"
	"testing"
	"unicode"
)

// The body metric of scrapinghub/article-extraction-benchmark (evaluate.py):
// tokens are runs of word characters (Python's \w), shingles are 4-grams of
// tokens counted as a multiset, and each page's true and false positives and
// false negatives are normalised to sum to 1 so that long pages weigh no
// more than short ones. Precision and recall are averaged over pages (those
// where they are defined) and F1 is computed from the two averages.

type tpFpFn struct{ tp, fp, fn float64 }

func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_')
	})
}

func shingles(s string, n int) map[string]int {
	toks := tokens(s)
	out := map[string]int{}
	for i := 0; i < max(1, len(toks)-n+1); i++ {
		if i >= len(toks) {
			break
		}
		out[strings.Join(toks[i:min(i+n, len(toks))], "\x00")]++
	}
	return out
}

func shingleMatch(truth, pred string) tpFpFn {
	ts, ps := shingles(truth, 4), shingles(pred, 4)
	var r tpFpFn
	for k, tc := range ts {
		pc := ps[k]
		r.tp += float64(min(tc, pc))
		r.fn += float64(max(0, tc-pc))
	}
	for k, pc := range ps {
		r.fp += float64(max(0, pc-ts[k]))
	}
	if s := r.tp + r.fp + r.fn; s > 0 {
		r.tp, r.fp, r.fn = r.tp/s, r.fp/s, r.fn/s
	}
	return r
}

// bodyScores returns precision, recall and F1 as evaluate.py computes them.
func bodyScores(pages []tpFpFn) (precision, recall, f1 float64) {
	var ps, rs []float64
	for _, p := range pages {
		if p.tp+p.fp > 0 {
			ps = append(ps, score(p.tp, p.fp, p.fn))
		}
		if p.tp+p.fn > 0 {
			rs = append(rs, score(p.tp, p.fn, p.fp))
		}
	}
	precision, recall = mean(ps), mean(rs)
	return precision, recall, 2 * precision * recall / (precision + recall)
}

// score is evaluate.py's precision_score(tp, fp, fn) (and, with fp and fn
// swapped, its recall_score).
func score(tp, fp, fn float64) float64 {
	switch {
	case fp == 0 && fn == 0:
		return 1
	case tp == 0 && fp == 0:
		return 0
	}
	return tp / (tp + fp)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func TestShingleMetricMatchesEvaluatePy(t *testing.T) {
	// Values computed with evaluate.py's string_shingle_matching.
	tests := []struct {
		truth, pred string
		want        tpFpFn
	}{
		{"a b c d e", "a b c d e", tpFpFn{1, 0, 0}},
		{"a b c d e", "a b c d", tpFpFn{0.5, 0, 0.5}},                     // shingles abcd, bcde vs abcd
		{"a b c d", "x a b c d y", tpFpFn{1.0 / 3, 2.0 / 3, 0}},           // abcd vs xabc, abcd, bcdy
		{"Héllo, wörld! 1_2 x", "héllo wörld 1_2 x", tpFpFn{0, 0.5, 0.5}}, // case matters
		{"", "", tpFpFn{0, 0, 0}},
		{"short", "", tpFpFn{0, 0, 1}},
	}
	for _, tt := range tests {
		got := shingleMatch(tt.truth, tt.pred)
		if math.Abs(got.tp-tt.want.tp) > 1e-9 || math.Abs(got.fp-tt.want.fp) > 1e-9 || math.Abs(got.fn-tt.want.fn) > 1e-9 {
			t.Errorf("shingleMatch(%q, %q) = %+v, want %+v", tt.truth, tt.pred, got, tt.want)
		}
	}
	// A page with nothing to find and nothing found counts in neither average.
	p, r, f := bodyScores([]tpFpFn{{1, 0, 0}, {0.5, 0, 0.5}, {0, 0, 0}})
	if math.Abs(p-1) > 1e-9 || math.Abs(r-0.75) > 1e-9 || math.Abs(f-2*p*r/(p+r)) > 1e-9 {
		t.Errorf("bodyScores = %v %v %v", p, r, f)
	}
}
