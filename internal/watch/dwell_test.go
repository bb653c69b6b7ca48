package watch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "under a minute"},
		{59 * time.Second, "under a minute"},
		{time.Minute, "1 min"},
		{59*time.Minute + 59*time.Second, "59 min"},
		{time.Hour, "1 h"},
		{3*time.Hour + 20*time.Minute + 59*time.Second, "3 h 20 min"},
		{23*time.Hour + 59*time.Minute, "23 h 59 min"},
		{24 * time.Hour, "1 day"},
		{28*time.Hour + 30*time.Minute, "1 day 4 h"},
		{12 * 24 * time.Hour, "12 days"},
		{50*time.Hour + 59*time.Minute, "2 days 2 h"},
		{-time.Hour, "under a minute"},
	} {
		if got := HumanDuration(tt.d); got != tt.want {
			t.Errorf("HumanDuration(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestDwellOfAnUpdate(t *testing.T) {
	found := time.Date(2026, 11, 30, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	u := Update{ID: 1, DiscoveredAt: found}
	if _, ok := u.Dwell(); ok {
		t.Error("an update without a removal has a dwell")
	}
	b, err := json.Marshal(u.Published())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "dwell_seconds") {
		t.Errorf("an update on its page: %s, want no dwell_seconds", b)
	}

	removed := found.Add(3*time.Hour + 20*time.Minute + 7*time.Second).UTC()
	u.RemovedAt = &removed
	if d, ok := u.Dwell(); !ok || d != 3*time.Hour+20*time.Minute+7*time.Second {
		t.Errorf("Dwell = %s, %t; want 3h20m7s", d, ok)
	}
	b, err = json.Marshal(u.Published())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"dwell_seconds":12007`) {
		t.Errorf("an update taken down: %s, want dwell_seconds 12007", b)
	}

	// A clock that stepped back gives no negative time.
	early := found.Add(-time.Second)
	u.RemovedAt = &early
	if p := u.Published(); p.DwellSeconds == nil || *p.DwellSeconds != 0 {
		t.Errorf("a removal before the discovery: dwell %v, want 0", p.DwellSeconds)
	}
	if DwellSeconds(time.Time{}, removed) != nil || DwellSeconds(found, time.Time{}) != nil {
		t.Error("DwellSeconds of an unknown time is not nil")
	}
}

func TestParseLinkState(t *testing.T) {
	for in, want := range map[string]LinkState{"": LinksCurrent, "current": LinksCurrent, "removed": LinksRemoved} {
		if got, err := ParseLinkState(in); err != nil || got != want {
			t.Errorf("ParseLinkState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Current", "gone", "all"} {
		if _, err := ParseLinkState(in); err == nil || !strings.Contains(err.Error(), "want current") {
			t.Errorf("ParseLinkState(%q) = %v; want an error that names the states", in, err)
		}
	}
}
