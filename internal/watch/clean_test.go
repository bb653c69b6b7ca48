package watch_test

import (
	"testing"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestCleanText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain https://example.com/a?b=c", "plain https://example.com/a?b=c"},
		{"x509: certificate is valid for a\x00b, not c", "x509: certificate is valid for ab, not c"},
		{"line one\nline two\ttab\r", "line one line two tab "},
		{"\x1b[31mred\x1b[0m", "[31mred[0m"},
		{"bell\x07 del\x7f", "bell del"},
		{"c1 \u0085next \u009bcsi", "c1 next csi"},
		{"evil\u202Etxt.exe", "eviltxt.exe"},
		{"\u202A\u202B\u202C\u202D\u2066\u2067\u2068\u2069isolates", "isolates"},
		{"invalid \xff\xfe", "invalid \uFFFD\uFFFD"},
		{"新闻 Новости ‎mark", "新闻 Новости ‎mark"}, // letters and the LRM (U+200E) stay
		{"", ""},
	} {
		got := watch.CleanText(tc.in)
		if got != tc.want {
			t.Errorf("CleanText(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("CleanText(%q) = %q is not valid UTF-8", tc.in, got)
		}
	}
}

func FuzzCleanText(f *testing.F) {
	f.Add("a\x00b\u202e\xff\x1b[0m")
	f.Fuzz(func(t *testing.T, s string) {
		got := watch.CleanText(s)
		if !utf8.ValidString(got) {
			t.Fatalf("CleanText(%q) = %q: invalid UTF-8", s, got)
		}
		for _, r := range got {
			if r < 0x20 || (r >= 0x7F && r <= 0x9F) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("CleanText(%q) = %q keeps %U", s, got, r)
			}
		}
		if watch.CleanText(got) != got {
			t.Fatalf("CleanText is not idempotent on %q", s)
		}
	})
}

func BenchmarkCleanTextASCII(b *testing.B) {
	s := "https://www.example-news.com/2026/11/30/a-story-about-something.html"
	b.ReportAllocs()
	for b.Loop() {
		watch.CleanText(s)
	}
}
