package web

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

func TestFeedsSummariseABurstAsOneEntryAndCarryTeasers(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/z","name":"Zeitung"}`)
	p := decode[pageJSON](t, b)
	at := time.Now().UTC().Truncate(time.Second)
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, burst)
		SELECT $1, 'https://z.example/neu/'||i, 'Neu '||i, 'c'||i, i, $2, true FROM generate_series(1, 30) i`, p.ID, at.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, summary)
		VALUES ($1, 'https://z.example/florenz', 'In Florenz: Priester muss Strafe zahlen', 'f', 100, $2, 'Vier Jahre lang kämpfte Don Leonardo Guerri')`,
		p.ID, at); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"atom", "rss", "json"} {
		resp, body := e.do("GET", "/feeds/all."+ext, e.readTok, "")
		feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s: %d %v", ext, resp.StatusCode, err)
		}
		if len(feed.Items) != 2 {
			t.Fatalf("%s: %d items, want the teaser's and the burst's", ext, len(feed.Items))
		}
		teaser, burst := feed.Items[0], feed.Items[1]
		if !strings.Contains(teaser.Description+teaser.Content, "Don Leonardo Guerri") {
			t.Errorf("%s: entry lacks its teaser: %q / %q", ext, teaser.Description, teaser.Content)
		}
		if burst.Title != "Redesign: 30 new links on Zeitung" || !strings.Contains(burst.Description+burst.Content, "and 25 more") {
			t.Errorf("%s: burst entry %q %q %q", ext, burst.Title, burst.Description, burst.Content)
		}
	}
}
