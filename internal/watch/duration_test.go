package watch

import (
	"testing"
	"time"
)

func TestParseAndFormatDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"10s", 10 * time.Second, "10s"},
		{"5m", 5 * time.Minute, "5m"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"1d", 24 * time.Hour, "1d"},
		{"2d12h", 60 * time.Hour, "2d12h"},
		{"24h", 24 * time.Hour, "1d"},
		{" 1h ", time.Hour, "1h"},
		{"1500ms", 1500 * time.Millisecond, "1.5s"},
	} {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want || FormatDuration(got) != tt.out {
			t.Errorf("ParseDuration(%q) = %v, %v, formatted %q; want %v, %q", tt.in, got, err, FormatDuration(got), tt.want, tt.out)
		}
	}
	for _, bad := range []string{"", "1", "d", "1x", "-5m", "1d-1h", "99999d"} {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, d)
		}
	}
}
