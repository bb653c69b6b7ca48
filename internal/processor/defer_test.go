package processor_test

import (
	"context"
	"testing"
	"time"
)

// A deferred check records nothing about the page's links or status: its
// links stay, a failing page keeps its failure count, and the next check is
// at the deferral's time.
func TestDeferredCheckRecordsOnlyTheNextCheck(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	f.deliver(t, f.task("/a"))
	failed := f.task()
	failed.Status, failed.Error = 503, "HTTP 503 Service Unavailable"
	f.deliver(t, failed)
	before, _ := f.st.Page(ctx, f.page.ID)

	deferred := f.task("/would-be-new") // links a crawler never sends; ignored if it did
	deferred.Status = 0
	deferred.DeferredUntil = time.Now().Add(20 * time.Second).Truncate(time.Microsecond)
	f.deliver(t, deferred)

	got, _ := f.st.Page(ctx, f.page.ID)
	if !got.NextCheckAt.Equal(deferred.DeferredUntil) {
		t.Errorf("next check at %v, want the deferral's %v", got.NextCheckAt, deferred.DeferredUntil)
	}
	if got.ConsecutiveFailures != before.ConsecutiveFailures || got.LastError != before.LastError ||
		!got.LastCheckedAt.Equal(before.LastCheckedAt) || got.LastStatus != before.LastStatus {
		t.Errorf("page after a deferral = %+v, want its status unchanged from %+v", got, before)
	}
	if u := f.updates(t); len(u) != 0 {
		t.Errorf("updates after a deferral = %v, want none", u)
	}
}
