package watch

import (
	"strings"
	"testing"
)

func TestPatternsAdmits(t *testing.T) {
	o := LinkOptions{
		Ignore:      []string{`[?&]session=`},
		IncludeText: []string{`\bukraine\b`, `^Live:`},
		IncludeURL:  []string{`/politik/`},
		ExcludeText: []string{`anzeige`},
		ExcludeURL:  []string{`/sponsored/`},
	}
	p, errs := CompilePatterns(o)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		name, url, text, summary string
		want                     bool
	}{
		{"text included, case ignored", "https://x.test/welt/1", "UKRAINE: talks resume", "", true},
		{"summary included", "https://x.test/welt/2", "Talks resume", "Kyiv and Ukraine delegations met", true},
		{"URL included", "https://x.test/politik/3", "Budget passes", "", true},
		{"neither included", "https://x.test/sport/4", "Cup final", "", false},
		{"text excluded wins over include", "https://x.test/politik/5", "ANZEIGE: Ukraine trip", "", false},
		{"summary excluded", "https://x.test/politik/6", "Budget", "Eine Anzeige", false},
		{"URL excluded wins over include", "https://x.test/sponsored/politik/7", "Ukraine", "", false},
		{"ignored", "https://x.test/politik/8?session=1", "Ukraine", "", false},
		{"word boundary", "https://x.test/welt/9", "Ukrainewatch", "", false},
	}
	for _, tt := range tests {
		if got := p.Admits(tt.url, tt.text, tt.summary); got != tt.want {
			t.Errorf("%s: Admits(%q, %q, %q) = %v, want %v", tt.name, tt.url, tt.text, tt.summary, got, tt.want)
		}
	}
	// Without include rules everything not excluded is kept.
	p, _ = CompilePatterns(LinkOptions{ExcludeText: []string{`^Anzeige`}})
	if !p.Admits("https://x.test/a", "Story", "") || p.Admits("https://x.test/b", "anzeige: buy", "") {
		t.Error("exclude-only rules: want stories kept and ads dropped")
	}
	if !(Patterns{}).Empty() || p.Empty() {
		t.Error("Empty: want true for no patterns only")
	}
}

func TestKeywordRulesCaps(t *testing.T) {
	// The instruction budget is shared by every list: five patterns of 200
	// instructions fit, a sixth does not, whichever list it is in.
	big := strings.Repeat("a", MaxPatternInsts-2)
	o := LinkOptions{Ignore: []string{big, big, big}, ExcludeText: []string{big, big, big}}
	p, errs := CompilePatterns(o)
	if len(p.Ignore) != 3 || len(p.ExcludeText) != 2 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "exclude-text pattern") {
		t.Fatalf("CompilePatterns: %d ignore, %d excludeText, errors %v; want 3, 2 and one excludeText refusal", len(p.Ignore), len(p.ExcludeText), errs)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "together") {
		t.Fatalf("Validate = %v, want the shared instruction cap", err)
	}
	many := make([]string, MaxIgnorePatterns+1)
	for i := range many {
		many[i] = "x"
	}
	for _, o := range []LinkOptions{{IncludeText: many}, {ExcludeText: many}, {IncludeURL: many}, {ExcludeURL: many}} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "at most 20") {
			t.Errorf("Validate(%d patterns) = %v, want the count cap", len(many), err)
		}
	}
	for _, tt := range []struct {
		o    LinkOptions
		want string
	}{
		{LinkOptions{IncludeText: []string{"("}}, `include-text pattern "("`},
		{LinkOptions{ExcludeURL: []string{""}}, "exclude-url pattern"},
		{LinkOptions{IncludeURL: []string{`\w{1000}`}}, "include-url pattern"},
	} {
		if err := tt.o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate(%+v) = %v, want one line naming %q", tt.o, err, tt.want)
		}
	}
}
