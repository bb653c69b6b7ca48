package watch

import (
	"strings"
	"testing"
	"time"
)

func TestParseWaitArticle(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"0", 0, ""},
		{"30s", 30 * time.Second, ""},
		{"2m", 2 * time.Minute, ""},
		{"10m", MaxWaitArticle, ""},
		{"11m", 0, "at most 10m"},
		{"1d", 0, "at most 10m"},
		{"-5s", 0, "negative"},
		{"soon", 0, "write it like"},
	} {
		got, err := ParseWaitArticle(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseWaitArticle(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseWaitArticle(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
		}
	}
}

func TestBatchArticleHold(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	update := func(age time.Duration, status ArticleStatus) Update {
		u := Update{DiscoveredAt: now.Add(-age)}
		if status != "" {
			u.Article = &Article{Status: status}
		}
		return u
	}
	for _, tt := range []struct {
		name    string
		wait    time.Duration
		updates []Update
		until   time.Time
	}{
		{"no wait", 0, []Update{update(time.Second, ArticlePending)}, time.Time{}},
		{"pending and young", 30 * time.Second, []Update{update(10*time.Second, ArticlePending)}, now.Add(20 * time.Second)},
		{"pending, wait over", 30 * time.Second, []Update{update(30*time.Second, ArticlePending)}, time.Time{}},
		{"read", 30 * time.Second, []Update{update(time.Second, ArticleOK), update(time.Second, ArticleError)}, time.Time{}},
		{"no article", 30 * time.Second, []Update{update(time.Second, "")}, time.Time{}},
		{"the youngest pending one sets the end", 30 * time.Second,
			[]Update{update(20*time.Second, ArticlePending), update(5*time.Second, ArticlePending), update(time.Second, ArticleOK)},
			now.Add(25 * time.Second)},
	} {
		until, held := Batch{Updates: tt.updates}.ArticleHold(tt.wait, now)
		if held != !tt.until.IsZero() || !until.Equal(tt.until) {
			t.Errorf("%s: ArticleHold = %s, %v; want %s", tt.name, until, held, tt.until)
		}
	}
}
