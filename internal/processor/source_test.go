package processor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A source's tasks: its first check is silent, a later one records the
// new items once, dated by the source unless the date lies ahead; a
// redelivery changes nothing; a task naming no known kind is dead-lettered
// and one of a source gone is acked; a failed check is the source's.
func TestSourceTasks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ctx := context.Background()
	all := []string{"homepage", "feeds"}
	if _, err := f.st.EditPage(ctx, f.page.ID, watch.PageEdit{Sources: &all}); err != nil {
		t.Fatal(err)
	}
	discovery := watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Discover: true,
		Discovered: []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "https://portal.example/rss", Title: "RSS"}}}
	f.deliver(t, discovery)
	sources, err := f.st.Sources(ctx, f.page.ID)
	if err != nil || len(sources) != 1 {
		t.Fatalf("sources after the discovery task = %+v, %v", sources, err)
	}
	src := &watch.SourceRef{ID: sources[0].ID, Kind: watch.SourceFeed, URL: sources[0].URL}
	item := func(path string, published *time.Time) watch.Link {
		return watch.Link{URL: "https://portal.example" + path, Text: "Item " + path, PublishedAt: published}
	}
	base := watch.Task{BaseURL: src.URL, ID: f.page.ID, Status: 200, Source: src, ItemsDigest: "d1", Context: []watch.Link{item("/a", nil)}}
	f.deliver(t, base)
	if ups := f.updates(t); len(ups) != 0 {
		t.Fatalf("the baseline recorded %v", ups)
	}
	dated := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	ahead := time.Now().Add(72 * time.Hour)
	next := watch.Task{BaseURL: src.URL, ID: f.page.ID, Status: 200, Source: src, ItemsDigest: "d2",
		Context: []watch.Link{item("/a", nil), item("/b", &dated), item("/c", &ahead), item("/b", nil)}}
	f.deliver(t, next)
	f.deliver(t, next) // redelivered
	ups, err := f.st.QueryUpdates(ctx, watch.UpdateFilter{PageID: f.page.ID})
	if err != nil || len(ups) != 2 {
		t.Fatalf("updates = %+v, %v; want /b and /c once each", ups, err)
	}
	for _, u := range ups {
		switch u.URL {
		case "https://portal.example/b":
			if u.PublishedAt == nil || !u.PublishedAt.Equal(dated) || u.Source != watch.SourceFeed {
				t.Errorf("/b = %+v", u)
			}
		case "https://portal.example/c":
			if u.PublishedAt != nil {
				t.Errorf("/c dated %v, three days ahead: want no date", u.PublishedAt)
			}
		}
	}
	bad, _ := json.Marshal(watch.Task{BaseURL: src.URL, ID: f.page.ID, Status: 200, Source: &watch.SourceRef{ID: src.ID, Kind: "podcast"}})
	if err := f.svc.Handle(ctx, watch.Delivery{Body: bad}); !watch.IsPermanent(err) {
		t.Fatalf("a task of an unknown kind = %v, want it dead-lettered", err)
	}
	gone, _ := json.Marshal(watch.Task{BaseURL: src.URL, ID: f.page.ID, Status: 200, Source: &watch.SourceRef{ID: src.ID + 99, Kind: "feed"}})
	if err := f.svc.Handle(ctx, watch.Delivery{Body: gone}); err != nil {
		t.Fatalf("a task of a source that is gone = %v, want it acked", err)
	}
	f.deliver(t, watch.Task{BaseURL: src.URL, ID: f.page.ID, Status: 404, Error: src.URL + ": HTTP 404", Source: src})
	sources, _ = f.st.Sources(ctx, f.page.ID)
	page, _ := f.st.Page(ctx, f.page.ID)
	if sources[0].Status() != "failing" || page.LastError != "" {
		t.Fatalf("after a failed check: source %+v, page error %q", sources[0], page.LastError)
	}
}
