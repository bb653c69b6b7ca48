package processor_test

import (
	"context"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// The processor passes what the crawler saw to the store, and counts each
// page that turns degraded or healthy, by reason; a task of an older
// crawler, without a count, changes nothing.
func TestHealthChangesAreCounted(t *testing.T) {
	f := newFixture(t, "")
	kept := func(n int, paths ...string) watch.Task {
		task := f.task(paths...)
		task.Kept = &n
		return task
	}
	f.deliver(t, kept(2, "/a", "/b"))
	f.deliver(t, kept(0))
	f.deliver(t, f.task()) // no count (an older crawler): still no_links
	if page, _ := f.st.Page(context.Background(), f.page.ID); page.Health.Reason != watch.NoLinks {
		t.Fatalf("after a check without a count: %+v, want no_links kept", page.Health)
	}
	blocked := watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Status: 403, Error: "HTTP 403"}
	f.deliver(t, blocked)
	f.deliver(t, kept(2, "/a", "/b"))
	page, err := f.st.Page(context.Background(), f.page.ID)
	if err != nil || page.Health.Degraded() {
		t.Fatalf("page after a healthy check: %+v, %v; want healthy", page.Health, err)
	}
	count := func(reason string) float64 {
		families, err := f.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range families {
			if fam.GetName() != "portalwatch_processor_health_changes_total" {
				continue
			}
			for _, m := range fam.GetMetric() {
				if m.GetLabel()[0].GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	if n, b, r := count("no_links"), count("blocked"), count("recovered"); n != 1 || b != 0 || r != 1 {
		t.Fatalf("health changes: no_links %v, blocked %v, recovered %v; want 1, 0 (a change of reason is no change), 1", n, b, r)
	}
}
