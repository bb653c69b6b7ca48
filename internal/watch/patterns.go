package watch

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// Caps on a page's ignore patterns (LinkOptions.Ignore). Every link of every
// check is matched against every pattern, so a pattern's cost is paid about
// a million times a day by a busy page; the caps keep it near that of a
// plain substring search. RE2 already guarantees matching in time linear in
// the URL, but the factor is the compiled program's size: `\w{1000}x`, nine
// characters, compiles to 1,003 instructions, is too big for Go's fast
// backtracking matcher and cost 79 s of CPU per check of a 5,000-link page.
const (
	// MaxIgnorePatterns is the most ignore patterns one page may have.
	MaxIgnorePatterns = 20
	// MaxPatternBytes is the longest ignore pattern, in bytes.
	MaxPatternBytes = 256
	// MaxPatternRepeat is the largest count a counted repetition ({n},
	// {n,}, {n,m}) may name; RE2's own limit is 1,000.
	MaxPatternRepeat = 100
	// MaxPatternInsts is the most instructions a pattern may compile to.
	// Real patterns take 10-100 (`^https?://(www\.)?example\.com/(tag|
	// category)/[^/]+/?$` takes 58).
	MaxPatternInsts = 200
)

// CheckPattern reports whether p may be used as an ignore pattern: not
// empty, valid RE2 syntax, and within MaxPatternBytes, MaxPatternRepeat and
// MaxPatternInsts. The error is one line that says which rule p breaks and
// what the limit is; it does not quote p.
func CheckPattern(p string) error {
	_, err := checkPattern(p)
	return err
}

// CompilePattern checks p as CheckPattern does and compiles it.
func CompilePattern(p string) (*regexp.Regexp, error) {
	if _, err := checkPattern(p); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(p)
	if err != nil {
		// checkPattern parsed it with the same flags; this is not expected.
		return nil, fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	return re, nil
}

func checkPattern(p string) (*syntax.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("an empty pattern would ignore every link")
	}
	if len(p) > MaxPatternBytes {
		return nil, fmt.Errorf("is %d bytes long; the longest allowed is %d", len(p), MaxPatternBytes)
	}
	// syntax.Perl is the flag set regexp.Compile uses.
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	if n := maxRepeat(re); n > MaxPatternRepeat {
		return nil, fmt.Errorf("repeats a part %d times; at most %d repetitions are allowed", n, MaxPatternRepeat)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return nil, fmt.Errorf("compiles to %d instructions; at most %d are allowed (shorten it, lower its repetition counts or split it in two)",
			n, MaxPatternInsts)
	}
	return re, nil
}

// maxRepeat returns the largest count named by a counted repetition in re.
func maxRepeat(re *syntax.Regexp) int {
	n := 0
	if re.Op == syntax.OpRepeat {
		n = max(re.Min, re.Max)
	}
	for _, sub := range re.Sub {
		n = max(n, maxRepeat(sub))
	}
	return n
}

// Validate reports whether o may be stored: at most MaxIgnorePatterns
// ignore patterns, each passing CheckPattern. The error is one line naming
// the first pattern refused (quoted, shortened when long) and why.
func (o LinkOptions) Validate() error {
	if len(o.Ignore) > MaxIgnorePatterns {
		return fmt.Errorf("%d ignore patterns; at most %d are allowed", len(o.Ignore), MaxIgnorePatterns)
	}
	for _, p := range o.Ignore {
		if err := CheckPattern(p); err != nil {
			return fmt.Errorf("ignore pattern %s: %w", QuotePattern(p), err)
		}
	}
	return nil
}

// QuotePattern quotes p for a one-line message, cut to its first 60 bytes
// (and marked so) when longer.
func QuotePattern(p string) string {
	const show = 60
	if len(p) <= show {
		return fmt.Sprintf("%q", p)
	}
	cut := show
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", p[:cut])
}
