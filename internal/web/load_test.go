package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadLatencyAtScale is the web program's benchmark (make bench-web):
// 10,000 pages and 1,000,000 updates, then sequential requests of each
// kind, the API's, the feeds' and the web page's, their p50 and p99, and
// the plans PostgreSQL chose. The updates are loaded through the trigger
// that counts new links per page and hour, so the pages list's sparklines
// read what a running installation would have. It runs only
// with PORTALWATCH_WEB_BENCH=1: loading takes a minute or two.
func TestReadLatencyAtScale(t *testing.T) {
	if os.Getenv("PORTALWATCH_WEB_BENCH") != "1" {
		t.Skip("set PORTALWATCH_WEB_BENCH=1 (make bench-web) to run the 1,000,000-update benchmark")
	}
	const (
		pages    = 10000
		perPage  = 100
		requests = 300
	)
	e := newEnv(t)
	ctx := context.Background()
	start := time.Now()
	// The trigram index is built after the load, as a restore would.
	for _, stmt := range []string{
		`DROP INDEX updates_text_trgm`,
		fmt.Sprintf(`INSERT INTO pages (base_url, name, tags, next_check_at)
			SELECT 'https://portal'||i||'.example/', 'Portal '||i,
				ARRAY['tag'||(i %% 50)] || CASE WHEN i %% 1000 = 0 THEN ARRAY['rare'] ELSE '{}' END, now() + interval '1 hour'
			FROM generate_series(1, %d) i`, pages),
		fmt.Sprintf(`INSERT INTO updates (page_id, url, text, code, link_key, discovered_at)
			SELECT p, 'https://portal'||p||'.example/story/'||n,
				(ARRAY['Budget','Election','Storm','Match','Court','Market','Health','School'])[1 + (p*7+n) %% 8]
					||' story '||n||' of portal '||p||CASE WHEN n = 50 AND p %% 1000 = 0 THEN ' zeppelin' ELSE '' END,
				'c'||n, n, now() - ((%d - n) * interval '7 hours') - (p * interval '1 second')
			FROM generate_series(1, %d) p, generate_series(1, %d) n`, perPage, pages, perPage),
		`CREATE INDEX updates_text_trgm ON updates USING gin (text gin_trgm_ops)`,
		`VACUUM (ANALYZE) pages`,
		`VACUUM (ANALYZE) updates`,
		`VACUUM (ANALYZE) page_hours`,
	} {
		if _, err := e.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%.60s: %v", stmt, err)
		}
	}
	t.Logf("loaded %d pages and %d updates in %s", pages, pages*perPage, time.Since(start).Round(time.Second))

	type result struct {
		Name     string  `json:"name"`
		P50ms    float64 `json:"p50_ms"`
		P99ms    float64 `json:"p99_ms"`
		Status   int     `json:"status"`
		Target   float64 `json:"target_p99_ms,omitempty"`
		Requests int     `json:"requests"`
	}
	measure := func(name string, target float64, path string, headers ...string) result {
		t.Helper()
		lat := make([]time.Duration, 0, requests)
		status := 0
		for i := 0; i < requests; i++ {
			req, _ := http.NewRequest("GET", e.srv.URL+strings.ReplaceAll(path, "{i}", fmt.Sprint(1+i*37%pages)), nil)
			req.Header.Set("Authorization", "Bearer "+e.readTok)
			for j := 0; j+1 < len(headers); j += 2 {
				req.Header.Set(headers[j], headers[j+1])
			}
			t0 := time.Now()
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
			status = resp.StatusCode
		}
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		return result{Name: name, P50ms: ms(lat[len(lat)/2]), P99ms: ms(lat[len(lat)*99/100]), Status: status, Target: target, Requests: requests}
	}

	feedResp, _ := e.do("GET", "/feeds/all.atom", e.readTok, "")
	etag := feedResp.Header.Get("ETag")
	tagResp, _ := e.do("GET", "/feeds/tags/tag7.atom", e.readTok, "")
	tagETag := tagResp.Header.Get("ETag")
	window := fmt.Sprintf("since=%s&until=%s", time.Now().Add(-10*24*time.Hour).UTC().Format(time.RFC3339),
		time.Now().Add(-3*24*time.Hour).UTC().Format(time.RFC3339))
	var results []result
	results = append(results,
		measure("api updates, newest 100", 50, "/api/v1/updates"),
		measure("api updates, limit 1000", 50, "/api/v1/updates?limit=1000"),
		measure("api updates, one page", 50, "/api/v1/updates?page={i}"),
		measure("api updates, one tag (200 pages)", 50, "/api/v1/updates?tag=tag7"),
		measure("api updates, rare tag (10 pages)", 50, "/api/v1/updates?tag=rare"),
		measure("api updates, common word", 50, "/api/v1/updates?q=budget"),
		measure("api updates, rare word", 50, "/api/v1/updates?q=zeppelin"),
		measure("api updates, 10 to 3 days back", 50, "/api/v1/updates?"+window),
		measure("feed all.atom (100 entries)", 20, "/feeds/all.atom"),
		measure("feed one page .rss", 20, "/feeds/pages/{i}.rss"),
		measure("feed one tag .json", 20, "/feeds/tags/tag7.json"),
		measure("page: pages list (100 of 10,000, sparklines)", 50, "/pages"),
		measure("page: pages list, a later screen", 50, "/pages?after={i}"),
		measure("page: pages list, one tag", 50, "/pages?tag=tag7"),
		measure("page: pages list, name search", 50, "/pages?q=portal99"),
		measure("page: river (50 newest, unread count)", 50, "/"),
		measure("page: river, one tag", 50, "/?tag=tag7"),
		measure("page: one page with its news", 50, "/pages/{i}"),
	)
	reads := e.reads.queries.Load()
	results = append(results,
		measure("feed all.atom, 304", 20, "/feeds/all.atom", "If-None-Match", etag),
		measure("feed one tag .atom, 304", 20, "/feeds/tags/tag7.atom", "If-None-Match", tagETag),
	)
	if n := e.reads.queries.Load() - reads; n != 0 {
		t.Errorf("the 304 requests read updates %d times", n)
	}
	for _, r := range results {
		line, _ := json.Marshal(r)
		t.Log(string(line))
		if r.Status != 200 && !strings.Contains(r.Name, "304") {
			t.Errorf("%s: status %d", r.Name, r.Status)
		}
	}

	// The plans the figures rely on, as PostgreSQL chose them here. The
	// store looks a tag's pages up first and sends their ids as an array.
	tagIDs := map[string]string{}
	for _, tag := range []string{"tag7", "rare"} {
		var ids string
		if err := e.pool.QueryRow(ctx, `SELECT array_agg(id)::text FROM pages WHERE tags @> ARRAY[$1]`, tag).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		tagIDs[tag] = "'" + ids + "'::bigint[]"
	}
	for _, q := range []struct{ name, sql string }{
		{"newest 100", `SELECT u.id FROM updates u JOIN pages p ON p.id = u.page_id ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"one page", `SELECT u.id FROM updates u JOIN pages p ON p.id = u.page_id WHERE u.page_id = 42 ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"one tag (200 pages)", `SELECT u.id FROM updates u JOIN pages p ON p.id = u.page_id
			WHERE u.page_id = ANY(` + tagIDs["tag7"] + `) ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"rare tag (10 pages)", `SELECT u.id FROM unnest(` + tagIDs["rare"] + `) AS t(page_id)
			CROSS JOIN LATERAL (SELECT * FROM updates u WHERE u.page_id = t.page_id ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100) u
			JOIN pages p ON p.id = u.page_id ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"rare word", `SELECT u.id FROM updates u JOIN pages p ON p.id = u.page_id WHERE u.text ILIKE '%zeppelin%' ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"common word", `SELECT u.id FROM updates u JOIN pages p ON p.id = u.page_id WHERE u.text ILIKE '%budget%' ORDER BY u.discovered_at DESC, u.id DESC LIMIT 100`},
		{"stamp, all", `WITH top AS (SELECT id, discovered_at FROM updates ORDER BY discovered_at DESC, id DESC LIMIT 1)
			SELECT (SELECT id FROM top), count(*), sum(id), max(changed_at) FROM pages`},
		{"sparklines of a screen", `SELECT page_id, hour, links FROM page_hours
			WHERE page_id = ANY(ARRAY(SELECT id FROM pages ORDER BY id LIMIT 100)) AND hour >= now() - interval '7 days'`},
		{"pages list screen", `SELECT id FROM pages WHERE deleted_at IS NULL AND id > 5000 ORDER BY id LIMIT 100`},
		{"unread count", `SELECT count(*) FROM (SELECT 1 FROM updates u JOIN pages p ON p.id = u.page_id
			WHERE (u.discovered_at, u.id) > (now() - interval '1 day', 0) AND p.deleted_at IS NULL LIMIT 1000) unread`},
		{"stamp, tag", `SELECT t.id FROM pages p CROSS JOIN LATERAL (SELECT id, discovered_at FROM updates WHERE page_id = p.id
			ORDER BY discovered_at DESC, id DESC LIMIT 1) t WHERE p.tags @> ARRAY['tag7'] ORDER BY t.discovered_at DESC, t.id DESC LIMIT 1`},
	} {
		rows, err := e.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q.sql)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan = append(plan, line)
		}
		rows.Close()
		t.Logf("plan, %s:\n%s", q.name, strings.Join(plan, "\n"))
	}
}
