package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestRevisionsPrintsHeadlineChanges: watchctl revisions prints the
// headline changes of a page newest first as a table, --limit of them,
// --json the objects of the API; a page not watched says so.
func TestRevisionsPrintsHeadlineChanges(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, e["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	if _, err := pool.Exec(ctx, `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text) VALUES
		($1, 'link.rewritten', $2, 1, 'https://zeitung.example/a', 'Minister resigns', 'Minister resigns after vote'),
		($1, 'link.rewritten', $2 + interval '1 minute', 2, 'https://zeitung.example/b', 'Storm warning', 'Storm & flood warning')`,
		page.ID, at); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, e, "revisions", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "WHEN") || !strings.Contains(lines[0], "OLD") ||
		!strings.Contains(lines[1], "Storm & flood warning") || !strings.Contains(lines[2], "Minister resigns after vote") ||
		!strings.Contains(lines[2], "https://zeitung.example/a") || !strings.Contains(lines[1], at.Add(time.Minute).Local().Format("2006-01-02 15:04:05")) {
		t.Fatalf("revisions 1: exit %d\n%s%s; want a table of b then a, with their times", code, out, errOut)
	}
	code, out, _ = runCLI(t, e, "revisions", "1", "--limit", "1", "--json")
	var r watch.Revision
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || strings.Count(out, "\n") != 1 || r.OldText != "Storm warning" ||
		r.NewText != "Storm & flood warning" || r.PageID != page.ID || !r.At.Equal(at.Add(time.Minute)) || !strings.Contains(out, `"old_text"`) {
		t.Fatalf("revisions 1 --limit 1 --json: exit %d %s (%v); want the newest alone as the API's object", code, out, err)
	}
	if code, _, errOut = runCLI(t, e, "revisions", "99"); code != exitUsage || !strings.Contains(errOut, "no watched page has id 99") {
		t.Fatalf("revisions 99: exit %d %q, want 2 saying no such page", code, errOut)
	}
	if code, _, errOut = runCLI(t, e, "revisions", "1", "--limit", "0"); code != exitUsage {
		t.Fatalf("revisions --limit 0: exit %d %q, want 2", code, errOut)
	}
	quiet, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://quiet.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ = runCLI(t, e, "revisions", "2"); code != 0 || quiet.ID != 2 || !strings.Contains(out, "no headline of page 2 has changed") {
		t.Fatalf("revisions of a page without any: exit %d %q", code, out)
	}
}
