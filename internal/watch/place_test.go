package watch_test

import (
	"testing"

	"github.com/goccy/go-json"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestPlaceValidate(t *testing.T) {
	tests := []struct {
		place watch.Place
		ok    bool
		label string
	}{
		{watch.Place{}, true, ""},
		{watch.Place{Position: 3, Heading: 2, Landmark: watch.LandmarkMain}, true, "#3 · main · h2"},
		{watch.Place{Position: 1, Landmark: watch.LandmarkNone}, true, "#1"},
		{watch.Place{Position: 1, Heading: 6, Landmark: watch.LandmarkFooter}, true, "#1 · footer · h6"},
		{watch.Place{Position: 0, Landmark: watch.LandmarkMain}, false, ""},
		{watch.Place{Position: 2, Heading: 7, Landmark: watch.LandmarkMain}, false, "#2 · main · h7"},
		{watch.Place{Position: 2, Heading: -1, Landmark: watch.LandmarkMain}, false, "#2 · main"},
		{watch.Place{Position: 2, Landmark: "region"}, false, "#2 · region"},
		{watch.Place{Position: 2}, false, "#2"},
	}
	for _, tt := range tests {
		err := tt.place.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tt.place, err, tt.ok)
		}
		if got := tt.place.Checked(); tt.ok && got != tt.place || !tt.ok && got != (watch.Place{}) {
			t.Errorf("%+v: Checked() = %+v", tt.place, got)
		}
		if got := tt.place.Label(); got != tt.label {
			t.Errorf("%+v: Label() = %q, want %q", tt.place, got, tt.label)
		}
	}
}

// A task from a crawler older than places decodes with every place
// unknown, and a place survives the message.
func TestPlaceInTask(t *testing.T) {
	old, err := watch.DecodeTask([]byte(`{"baseUrl":"http://a.example/","id":1,"context":[{"url":"http://a.example/x","text":"X"}]}`))
	if err != nil || old.Context[0].Known() {
		t.Fatalf("old task: %+v, %v", old, err)
	}
	task := watch.Task{BaseURL: "http://a.example/", ID: 1, Context: []watch.Link{
		{URL: "http://a.example/x", Text: "X", Place: watch.Place{Position: 2, Heading: 3, Landmark: watch.LandmarkAside}}}}
	body, err := watch.EncodeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	back, err := watch.DecodeTask(body)
	if err != nil || back.Context[0] != task.Context[0] {
		t.Fatalf("%s decoded as %+v, %v", body, back, err)
	}
	u, _ := json.Marshal(watch.Update{ID: 1, Place: watch.Place{Position: 4, Landmark: watch.LandmarkNone}})
	var fields map[string]any
	if err := json.Unmarshal(u, &fields); err != nil || fields["position"] != float64(4) || fields["landmark"] != "none" || fields["heading"] != nil {
		t.Errorf("update JSON %s", u)
	}
}
