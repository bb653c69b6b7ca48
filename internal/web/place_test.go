package web

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestPlacesInAPIFeedsAndPage holds that an update's place reaches the API
// (checked against openapi.json), the three feeds as categories and the
// page view, whose ?sort=place orders each check by position.
func TestPlacesInAPIFeedsAndPage(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/p","name":"Placed"}`)
	page := decode[pageJSON](t, b)
	now := time.Now().UTC().Truncate(time.Second)
	// One check found three links; an older one found a link with no place.
	_, err := e.pool.Exec(context.Background(), `
		INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, position, heading, landmark)
		VALUES ($1, 'https://example.com/third', 'Third', 'c3', 3, $2, 9, NULL, 'footer'),
		       ($1, 'https://example.com/first', 'First', 'c1', 1, $2, 1, 2, 'main'),
		       ($1, 'https://example.com/second', 'Second', 'c2', 2, $2, 4, 0, 'none'),
		       ($1, 'https://example.com/old', 'Old', 'c4', 4, $2 - interval '1 hour', NULL, NULL, NULL)`, page.ID, now)
	if err != nil {
		t.Fatal(err)
	}

	resp, b := e.do("GET", fmt.Sprintf("/api/v1/updates?page=%d", page.ID), e.readTok, "")
	if resp.StatusCode != 200 {
		t.Fatalf("updates: %d %s", resp.StatusCode, b)
	}
	list := decode[struct{ Updates []watch.Update }](t, b)
	got := map[string]watch.Place{}
	for _, u := range list.Updates {
		got[u.Text] = u.Place
	}
	want := map[string]watch.Place{"First": {Position: 1, Heading: 2, Landmark: watch.LandmarkMain},
		"Second": {Position: 4, Landmark: watch.LandmarkNone}, "Third": {Position: 9, Landmark: watch.LandmarkFooter}, "Old": {}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("API places %v, want %v", got, want)
	}
	if !bytes.Contains(b, []byte(`"position":1,"heading":2,"landmark":"main"`)) || bytes.Contains(b, []byte(`"heading":0`)) {
		t.Errorf("API body %s", b)
	}

	wantCategories := map[string][]string{"First": {"position:1", "landmark:main", "heading:2"}, "Second": {"position:4"},
		"Third": {"position:9", "landmark:footer"}, "Old": nil}
	for _, ext := range []string{"atom", "rss", "json"} {
		path := fmt.Sprintf("/feeds/pages/%d.%s", page.ID, ext)
		resp, body := e.do("GET", path, e.readTok, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, it := range feed.Items {
			if !slices.Equal(it.Categories, wantCategories[it.Title]) {
				t.Errorf("%s: %s has categories %q, want %q", path, it.Title, it.Categories, wantCategories[it.Title])
			}
		}
	}

	order := func(body string) []string {
		texts := []string{"First", "Second", "Third", "Old"}
		slices.SortFunc(texts, func(a, b string) int {
			return strings.Index(body, `rel="noreferrer">`+a+`<`) - strings.Index(body, `rel="noreferrer">`+b+`<`)
		})
		return texts
	}
	path := fmt.Sprintf("/pages/%d", page.ID)
	_, newest := e.get(path, e.readTok)
	resp, byPlace := e.get(path+"?sort=place", e.readTok)
	if resp.StatusCode != 200 {
		t.Fatalf("%s?sort=place: %d", path, resp.StatusCode)
	}
	if got := order(byPlace); !slices.Equal(got, []string{"First", "Second", "Third", "Old"}) {
		t.Errorf("sorted by place: %q", got)
	}
	if got := order(newest); got[3] != "Old" || slices.Equal(got, []string{"First", "Second", "Third", "Old"}) {
		t.Errorf("newest first: %q, want the check by id, then Old", got)
	}
	if !strings.Contains(byPlace, `>#1 · main · h2<`) || !strings.Contains(byPlace, `>#9 · footer<`) || !strings.Contains(byPlace, `<strong>by place on the page</strong>`) {
		t.Errorf("page view does not show places:\n%s", byPlace)
	}
}
