package watch

import (
	"strings"
	"testing"
)

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // a substring of the refusal; "" means accepted
	}{
		{`\?page=\d+`, ""},
		{`^https?://(www\.)?example\.com/(tag|category|author)/[^/]+/?$`, ""},
		{`[a-f0-9]{32}`, ""},
		{`\w{100}x`, ""},
		{"", "empty pattern"},
		{"(", "RE2 syntax"},
		{`\w{1000}x`, "repeats a part 1000 times; at most 100"},
		{`a{101,}`, "repeats a part 101 times"},
		{`(\w{100}){10}`, "compiles to"},
		{`(?i)` + strings.Repeat(`[a-z]{9}`, 25), "compiles to"},
		{strings.Repeat("a", MaxPatternBytes+1), "257 bytes long; the longest allowed is 256"},
	}
	for _, tt := range tests {
		err := CheckPattern(tt.pattern)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckPattern(%q) = %v, want nil", tt.pattern, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckPattern(%q) = %v, want one line containing %q", tt.pattern, err, tt.want)
		}
		if res, errs := CompileIgnore([]string{tt.pattern}); len(res) != 0 || len(errs) != 1 {
			t.Errorf("CompileIgnore(%q) = %v, %v; want the pattern refused", tt.pattern, res, errs)
		}
	}
	// A literal of n bytes compiles to n+2 instructions (the fail and match
	// instructions): the largest program allowed is allowed, one more is not.
	if err := CheckPattern(strings.Repeat("a", MaxPatternInsts-2)); err != nil {
		t.Errorf("a pattern of %d instructions: %v", MaxPatternInsts, err)
	}
	if err := CheckPattern(strings.Repeat("a", MaxPatternInsts-1)); err == nil || !strings.Contains(err.Error(), "compiles to 201 instructions") {
		t.Errorf("a pattern of %d instructions: %v, want refused", MaxPatternInsts+1, err)
	}
}

func TestCompileIgnoreKeepsTheGoodPatterns(t *testing.T) {
	// Six patterns of 193 instructions: the sixth would take the page past
	// MaxIgnoreInsts, as would a seventh; the small one after them fits.
	big := `\w{100}\w{90}x`
	patterns := []string{big, big, big, big, big, big, "(", big, `\?p=\d+`}
	res, errs := CompileIgnore(patterns)
	if len(res) != 6 || res[5].String() != `\?p=\d+` {
		t.Fatalf("compiled %v, want five big patterns and the small one", res)
	}
	if len(errs) != 3 || !strings.Contains(errs[0].Error(), "1158 instructions together; at most 1000") ||
		!strings.Contains(errs[1].Error(), `ignore pattern "("`) {
		t.Errorf("errors %v, want the sixth big one, the bad one and the seventh big one named", errs)
	}
	many := make([]string, MaxIgnorePatterns+3)
	for i := range many {
		many[i] = "p"
	}
	if res, errs := CompileIgnore(many); len(res) != MaxIgnorePatterns || len(errs) != 1 || !strings.Contains(errs[0].Error(), "the last 3 skipped") {
		t.Errorf("%d patterns: %d compiled, errors %v", len(many), len(res), errs)
	}
	if err := (LinkOptions{Ignore: patterns[:6]}).Validate(); err == nil || !strings.Contains(err.Error(), "together") {
		t.Errorf("Validate of six big patterns = %v, want refused", err)
	}
}

func TestLinkOptionsValidate(t *testing.T) {
	ok := LinkOptions{SameSiteOnly: true, Ignore: make([]string, MaxIgnorePatterns)}
	for i := range ok.Ignore {
		ok.Ignore[i] = `\?p=\d+`
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%d patterns: %v", MaxIgnorePatterns, err)
	}
	tooMany := LinkOptions{Ignore: append(ok.Ignore, "x")}
	if err := tooMany.Validate(); err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Errorf("%d patterns: %v, want refused", len(tooMany.Ignore), err)
	}
	long := strings.Repeat("é", 200)
	err := LinkOptions{Ignore: []string{`ok`, long}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "...") || len(err.Error()) > 200 {
		t.Errorf("a long pattern: %v, want a short one-line refusal naming a cut-down pattern", err)
	}
}
