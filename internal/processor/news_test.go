package processor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestSummaryAndBurstReachTheUpdates(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Burst: watch.Burst{Share: 0.5, Min: 20}})
	f.deliver(t, f.task("/a"))
	news := f.task("/a", "/b")
	news.Context[1].Summary = "Vier Jahre lang kämpfte Don Leonardo Guerri für …"
	f.deliver(t, news)
	ups, err := f.st.QueryUpdates(context.Background(), watch.UpdateFilter{})
	if err != nil || len(ups) != 1 || ups[0].Summary != news.Context[1].Summary || ups[0].Burst {
		t.Fatalf("updates = %+v, %v; want /b with its teaser, no burst", ups, err)
	}

	// A redesign: 30 new links beside the 2 known ones.
	paths := []string{"/a", "/b"}
	for i := range 30 {
		paths = append(paths, fmt.Sprintf("/neu/%d", i))
	}
	f.deliver(t, f.task(paths...))
	ups, _ = f.st.QueryUpdates(context.Background(), watch.UpdateFilter{Limit: 100})
	bursts := 0
	for _, u := range ups {
		if u.Burst {
			bursts++
		}
	}
	if len(ups) != 31 || bursts != 30 {
		t.Fatalf("%d updates, %d flagged burst; want 31 and the redesign's 30", len(ups), bursts)
	}
}

// TestPlacesReachTheUpdates holds that a link's place is recorded with its
// update and read back; a link without one (an older crawler) or with an
// invalid one is recorded with its place not known.
func TestPlacesReachTheUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a"))
	news := f.task("/a", "/b", "/c", "/d", "/e")
	want := map[string]watch.Place{
		"/b": {Position: 2, Heading: 2, Landmark: watch.LandmarkMain},
		"/c": {Position: 5, Landmark: watch.LandmarkNone},
		"/d": {},
		"/e": {},
	}
	news.Context[1].Place = want["/b"]
	news.Context[2].Place = want["/c"]
	news.Context[4].Place = watch.Place{Position: 3, Heading: 9, Landmark: watch.LandmarkMain} // invalid
	f.deliver(t, news)
	ups, err := f.st.QueryUpdates(context.Background(), watch.UpdateFilter{})
	if err != nil || len(ups) != 4 {
		t.Fatalf("updates = %+v, %v; want 4", ups, err)
	}
	for _, u := range ups {
		path := strings.TrimPrefix(u.URL, "https://portal.example")
		if u.Place != want[path] {
			t.Errorf("update %s: place %+v, want %+v", path, u.Place, want[path])
		}
	}
}
