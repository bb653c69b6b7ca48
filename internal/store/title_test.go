package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A check records the page's <title>, which names a page its user did not
// name; a check without one (a 304, say) keeps the last, and so does a late
// redelivery of an older check.
func TestChecksRecordThePageTitle(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://titled.example/", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	links := []watch.NewLink{{Key: 1, URL: "https://titled.example/a", Text: "A", Code: "aaaaaaaa"}}
	check := func(at time.Time, title string, status int, links []watch.NewLink) {
		t.Helper()
		c := ok(p.ID, at)
		c.Title, c.Status = title, status
		if _, err := st.RecordCheck(ctx, c, links); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		at     time.Time
		title  string
		status int
		links  []watch.NewLink
		want   string
	}{
		{t0, "Titled – News", 200, links, "Titled – News"},                  // the baseline, with links
		{t0.Add(time.Minute), "Titled – Today", 200, nil, "Titled – Today"}, // no new links
		{t0.Add(2 * time.Minute), "", 304, nil, "Titled – Today"},           // not modified: kept
		{t0.Add(30 * time.Second), "Stale", 200, nil, "Titled – Today"},     // older than the last: ignored
	} {
		check(step.at, step.title, step.status, step.links)
		got, err := st.Page(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != step.want || got.DisplayName() != step.want {
			t.Fatalf("after a check with title %q: Title %q, DisplayName %q; want %q", step.title, got.Title, got.DisplayName(), step.want)
		}
	}
}
