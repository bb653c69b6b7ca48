package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A page's proxy is stored, shown, copied into its job and its articles'
// work, changed (re-baselining a page with a baseline, as another exit may
// see another edition) and cleared.
func TestPageProxyTravelsToTheJob(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://proxied.example/", Proxy: "corp"})
	if err != nil || p.Proxy != "corp" {
		t.Fatalf("created %q, %v", p.Proxy, err)
	}
	direct, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://direct.example/"})
	if err != nil || direct.Proxy != "" {
		t.Fatalf("created %q, %v", direct.Proxy, err)
	}
	var isNull bool
	if err := pool.QueryRow(ctx, `SELECT proxy IS NULL FROM pages WHERE id = $1`, direct.ID).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("a direct page's proxy column: null %t, %v", isNull, err)
	}
	var jobs []watch.Job
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v, %d jobs", err, len(jobs))
	}
	for _, j := range jobs {
		if want := map[int64]string{p.ID: "corp", direct.ID: ""}[j.ID]; j.Proxy != want {
			t.Errorf("job of page %d has proxy %q, want %q", j.ID, j.Proxy, want)
		}
	}

	if _, err := pool.Exec(ctx, `UPDATE pages SET baseline_at = now(), etag = '"x"' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	same := "corp"
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Proxy: &same}); err != nil || p.RebaselinePending {
		t.Fatalf("the same proxy again: rebaseline %t, %v", p.RebaselinePending, err)
	}
	other := "eu"
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Proxy: &other}); err != nil || p.Proxy != "eu" || !p.RebaselinePending {
		t.Fatalf("another proxy: %q, rebaseline %t, %v", p.Proxy, p.RebaselinePending, err)
	}
	name := "renamed"
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Name: &name}); err != nil || p.Proxy != "eu" {
		t.Fatalf("an edit of the name changed the proxy to %q, %v", p.Proxy, err)
	}

	for _, q := range []string{
		`INSERT INTO updates (id, page_id, link_key, url, text, code, discovered_at) VALUES (1, $1, 1, 'https://proxied.example/story', 'Story', 's1', now())`,
		`INSERT INTO article_work (discovered_at, page_id, url) VALUES (now(), $1, 'https://proxied.example/story')`,
	} {
		if _, err := pool.Exec(ctx, q, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	work, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil || len(work) != 1 || work[0].Proxy != "eu" {
		t.Fatalf("article work %+v, %v; want it read through eu", work, err)
	}

	none := ""
	if p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Proxy: &none}); err != nil || p.Proxy != "" {
		t.Fatalf("cleared: %q, %v", p.Proxy, err)
	}
	if err := pool.QueryRow(ctx, `SELECT proxy IS NULL FROM pages WHERE id = $1`, p.ID).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("the proxy column after clearing: null %t, %v", isNull, err)
	}
}
