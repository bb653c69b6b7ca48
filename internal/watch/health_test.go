package watch_test

import (
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestBlockOf(t *testing.T) {
	for _, tc := range []struct {
		status    int
		challenge string
		want      watch.Degradation
		detail    string
	}{
		{401, "", watch.Blocked, "the page answered 401 Unauthorized"},
		{403, "", watch.Blocked, "the page answered 403 Forbidden"},
		{429, "", watch.Blocked, "the page answered 429 Too Many Requests"},
		{200, "DataDome", watch.Challenge, "the site answered with a DataDome challenge page instead of the page"},
		{403, "Cloudflare", watch.Challenge, "the site answered with a Cloudflare challenge page instead of the page"},
		{500, "", "", ""},
		{404, "", "", ""},
		{0, "", "", ""},
	} {
		if got, detail := watch.BlockOf(tc.status, tc.challenge); got != tc.want || detail != tc.detail {
			t.Errorf("BlockOf(%d, %q) = %q %q, want %q %q", tc.status, tc.challenge, got, detail, tc.want, tc.detail)
		}
	}
}

func TestRegionDetail(t *testing.T) {
	if got, want := watch.RegionDetail([]string{"#latest"}), `no element matched the region "#latest"`; got != want {
		t.Errorf("one region: %q, want %q", got, want)
	}
	if got, want := watch.RegionDetail([]string{"#a", ".b"}), `no element matched any of the regions "#a", ".b"`; got != want {
		t.Errorf("two regions: %q, want %q", got, want)
	}
}

// Only a task that read the page has a Reading, and a task of a crawler
// older than watch health (no kept) decodes without one.
func TestTaskReading(t *testing.T) {
	old, err := watch.DecodeTask([]byte(`{"baseUrl":"https://a.example/","id":1,"status":200,"context":[]}`))
	if err != nil || old.Reading() != nil {
		t.Fatalf("an old task: %+v, %v; want no reading", old, err)
	}
	task, err := watch.DecodeTask([]byte(`{"baseUrl":"https://a.example/","id":1,"status":200,"context":[],"kept":0,"missedRegions":["#x"]}`))
	if r := task.Reading(); err != nil || r == nil || r.Kept != 0 || len(r.MissedRegions) != 1 {
		t.Fatalf("a task with kept 0: %+v, %v; want a reading", r, err)
	}
	task.Unchanged = true
	if task.Reading() != nil {
		t.Error("an unchanged task has a reading: its links were judged when recorded")
	}
	task.Unchanged, task.Status = false, 304
	if task.Reading() != nil {
		t.Error("a 304 has a reading")
	}
	task.Status, task.Error = 403, "HTTP 403"
	if task.Reading() != nil {
		t.Error("a failed task has a reading")
	}
	if watch.FewLinks.Words() != "few links" {
		t.Errorf("Words = %q", watch.FewLinks.Words())
	}
}
