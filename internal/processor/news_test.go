package processor_test

import (
	"context"
	"fmt"
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
