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
		if re, err := CompilePattern(tt.pattern); err == nil || re != nil {
			t.Errorf("CompilePattern(%q) compiled a refused pattern", tt.pattern)
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
