package watch

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// Caps on a page's patterns: its ignore patterns (LinkOptions.Ignore) and
// its keyword rules (IncludeText, ExcludeText, IncludeURL, ExcludeURL).
// Every link of every check is matched against every pattern, so a pattern's cost is paid about
// a million times a day by a busy page; the caps keep it near that of a
// plain substring search. RE2 already guarantees matching in time linear in
// the URL, but the factor is the compiled program's size: `\w{1000}x`, nine
// characters, compiles to 1,003 instructions, is too big for Go's fast
// backtracking matcher and cost 79 s of CPU per check of a 5,000-link page.
const (
	// MaxIgnorePatterns is the most patterns one of a page's lists may
	// have (its ignore patterns, or one list of keyword rules).
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
	// MaxIgnoreInsts is the most instructions a page's patterns (ignore
	// patterns and keyword rules) may compile to together: every link is
	// matched against all of them, so this, not the size of one, bounds the
	// matching cost per link.
	MaxIgnoreInsts = 1000
)

// CheckPattern reports whether p may be used as an ignore pattern: not
// empty, valid RE2 syntax, and within MaxPatternBytes, MaxPatternRepeat and
// MaxPatternInsts. The error is one line that says which rule p breaks and
// what the limit is; it does not quote p.
func CheckPattern(p string) error {
	_, err := patternInsts(p)
	return err
}

// patternInsts checks p as CheckPattern does and returns the number of
// instructions it compiles to.
func patternInsts(p string) (int, error) {
	if p == "" {
		return 0, fmt.Errorf("an empty pattern matches every link")
	}
	if len(p) > MaxPatternBytes {
		return 0, fmt.Errorf("is %d bytes long; the longest allowed is %d", len(p), MaxPatternBytes)
	}
	// syntax.Perl is the flag set regexp.Compile uses.
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 0, fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	if n := maxRepeat(re); n > MaxPatternRepeat {
		return 0, fmt.Errorf("repeats a part %d times; at most %d repetitions are allowed", n, MaxPatternRepeat)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, fmt.Errorf("not a valid regular expression (RE2 syntax): %v", err)
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return 0, fmt.Errorf("compiles to %d instructions; at most %d are allowed (shorten it, lower its repetition counts or split it in two)",
			n, MaxPatternInsts)
	}
	return len(prog.Inst), nil
}

// CompileIgnore compiles a page's ignore patterns within the caps: at most
// MaxIgnorePatterns of them, each passing CheckPattern, MaxIgnoreInsts
// instructions together. It returns the patterns that pass, in order, and
// one error per pattern that does not (one line, naming the pattern), so
// that a caller can refuse the list (Validate) or use the rest (the crawler,
// with a row stored before the caps).
func CompileIgnore(patterns []string) ([]*regexp.Regexp, []error) {
	total := 0
	return compileList("ignore pattern", patterns, false, &total)
}

// compileList compiles one list of a page's patterns, named kind in
// messages, as CompileIgnore does; foldCase matches ignoring case. total
// counts the instructions of the page's patterns compiled so far.
func compileList(kind string, patterns []string, foldCase bool, total *int) ([]*regexp.Regexp, []error) {
	var errs []error
	if len(patterns) > MaxIgnorePatterns {
		errs = append(errs, fmt.Errorf("%d %ss; at most %d are allowed: the last %d skipped",
			len(patterns), kind, MaxIgnorePatterns, len(patterns)-MaxIgnorePatterns))
		patterns = patterns[:MaxIgnorePatterns]
	}
	res := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		n, err := patternInsts(p)
		if err == nil && *total+n > MaxIgnoreInsts {
			err = fmt.Errorf("the page's patterns would compile to %d instructions together; at most %d are allowed", *total+n, MaxIgnoreInsts)
		}
		var re *regexp.Regexp
		if err == nil {
			if foldCase {
				// (?i) makes a pattern's case-folded letters classes;
				// the caps are checked on the pattern as written, and
				// RE2 keeps its matching linear either way.
				re, err = regexp.Compile("(?i)" + p)
			} else {
				re, err = regexp.Compile(p)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, QuotePattern(p), err))
			continue
		}
		*total += n
		res = append(res, re)
	}
	return res, errs
}

// Patterns are a page's compiled patterns: ignore patterns and keyword
// rules (see LinkOptions).
type Patterns struct {
	Ignore, IncludeText, ExcludeText, IncludeURL, ExcludeURL []*regexp.Regexp
}

// Empty reports whether p filters nothing.
func (p Patterns) Empty() bool {
	return len(p.Ignore)+len(p.IncludeText)+len(p.ExcludeText)+len(p.IncludeURL)+len(p.ExcludeURL) == 0
}

// Admits reports whether a link of url, text and summary passes p: not
// ignored, not excluded, and included when there are include rules.
func (p Patterns) Admits(url, text, summary string) bool {
	for _, re := range p.Ignore {
		if re.MatchString(url) {
			return false
		}
	}
	for _, re := range p.ExcludeURL {
		if re.MatchString(url) {
			return false
		}
	}
	for _, re := range p.ExcludeText {
		if re.MatchString(text) || summary != "" && re.MatchString(summary) {
			return false
		}
	}
	if len(p.IncludeText)+len(p.IncludeURL) == 0 {
		return true
	}
	for _, re := range p.IncludeURL {
		if re.MatchString(url) {
			return true
		}
	}
	for _, re := range p.IncludeText {
		if re.MatchString(text) || summary != "" && re.MatchString(summary) {
			return true
		}
	}
	return false
}

// CompilePatterns compiles the ignore patterns and keyword rules of o:
// each list within MaxIgnorePatterns, each pattern passing CheckPattern,
// all of them within MaxIgnoreInsts together (counted in the order Ignore,
// IncludeText, ExcludeText, IncludeURL, ExcludeURL). Text rules match
// ignoring case. Like CompileIgnore it returns the patterns that pass and
// one error per pattern that does not, one line naming its list and the
// pattern.
func CompilePatterns(o LinkOptions) (Patterns, []error) {
	var (
		p     Patterns
		all   []error
		total int
	)
	for _, l := range []struct {
		kind     string
		src      []string
		foldCase bool
		dst      *[]*regexp.Regexp
	}{
		{"ignore pattern", o.Ignore, false, &p.Ignore},
		{"include-text pattern", o.IncludeText, true, &p.IncludeText},
		{"exclude-text pattern", o.ExcludeText, true, &p.ExcludeText},
		{"include-url pattern", o.IncludeURL, false, &p.IncludeURL},
		{"exclude-url pattern", o.ExcludeURL, false, &p.ExcludeURL},
	} {
		res, errs := compileList(l.kind, l.src, l.foldCase, &total)
		*l.dst = res
		all = append(all, errs...)
	}
	return p, all
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
