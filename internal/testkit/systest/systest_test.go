package systest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
)

// TestSpellingsNormaliseToOneLink is what the farms rely on: every spelling
// of a link is one link to a correct system.
func TestSpellingsNormaliseToOneLink(t *testing.T) {
	t.Parallel()
	const origin = "http://127.0.0.1:4711"
	base, _ := url.Parse(origin + "/p3/")
	for _, path := range []string{"/p3/news/1/a", "/p3/news/2/b?id=2&lang=en"} {
		want, err := urlnorm.Normalize(origin + path)
		if err != nil {
			t.Fatal(err)
		}
		spellings := map[string]bool{}
		for n := range 10 {
			href := systest.Spell(path, origin, n)
			spellings[href] = true
			got, err := urlnorm.Resolve(base, href)
			if err != nil || got != want {
				t.Errorf("Spell(%q, n=%d) = %q, which resolves to %q (%v), want %q", path, n, href, got, err, want)
			}
		}
		if len(spellings) < 5 {
			t.Errorf("%s: %d spellings over 10 responses, want at least 5", path, len(spellings))
		}
	}
}

func TestSandboxCloseRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := systest.Shared()
	sb, err := systest.NewSandbox(ctx, svc, "pwtest", testsvc.ID(t))
	if err != nil {
		testsvc.Unavailable(t, "%v", err)
	}
	conn, err := pgx.Connect(ctx, sb.DBURL)
	if err != nil {
		t.Fatalf("the sandbox's database: %v", err)
	}
	conn.Close(ctx)
	opts, _ := redis.ParseURL(svc.RedisURL)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	rdb.Set(ctx, sb.Prefix+":seen", 1, time.Minute)
	if err := sb.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	admin, err := pgx.Connect(ctx, svc.PostgresAdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, sb.DBName).Scan(&n)
	if n != 0 {
		t.Errorf("database %s still exists after Close", sb.DBName)
	}
	if rdb.Exists(ctx, sb.Prefix+":seen").Val() != 0 {
		t.Errorf("key under %s still exists after Close", sb.Prefix)
	}
}

func TestProcessStopKillsAfterGrace(t *testing.T) {
	t.Parallel()
	// sh ignores SIGTERM here, as a program stuck in shutdown would.
	script := t.TempDir() + "/stuck"
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\necho started\nwhile :; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := systest.StartProcess(script, "stuck", nil)
	if err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the script to start", func() (bool, error) { return p.Output() == "started\n", nil })
	start := time.Now()
	code, killed := p.Stop(200 * time.Millisecond)
	if !killed || code != -1 || !p.Exited() {
		t.Fatalf("Stop = %d, killed %v, exited %v; want -1, killed, exited", code, killed, p.Exited())
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("Stop killed after %s, before its grace", took)
	}
}

// TestRemovalTruth: the farm demands a removal only for transient links
// gone for k checked rounds, leaves those gone for fewer unsettled, and its
// quiet rounds bring nothing and show no transient link.
func TestRemovalTruth(t *testing.T) {
	t.Parallel()
	farm := systest.NewFarm(t, 3)
	farm.QuietAfter(3)
	for range 5 { // 3 scripted rounds, 2 quiet
		farm.Advance(0, false)
	}
	farm.Advance(1, false)
	farm.Advance(1, false)
	for _, byTimeout := range []bool{false, true, false, false} {
		farm.Advance(2, byTimeout) // round 1 of page 2 had no recorded check
	}
	live := func(i, r int) string {
		return strings.TrimSuffix(farm.URL(i), fmt.Sprintf("/p%d/", i)) + fmt.Sprintf("/p%d/live/%d", i, r)
	}
	removed, unsettled := farm.RemovalTruth(2)
	want := map[int][]string{0: {live(0, 1), live(0, 2), live(0, 3)}, 1: nil, 2: {live(2, 2)}}
	wantUnsettled := map[int][]string{0: nil, 1: {live(1, 1)}, 2: {live(2, 1), live(2, 3)}}
	for i := range 3 {
		if got := sortedKeys(removed[i]); fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("page %d: removed %q, want %q", i, got, want[i])
		}
		if got := sortedKeys(unsettled[i]); fmt.Sprint(got) != fmt.Sprint(wantUnsettled[i]) {
			t.Errorf("page %d: unsettled %q, want %q", i, got, wantUnsettled[i])
		}
	}
	if n := len(farm.Truth()[0]); n != 9 {
		t.Errorf("page 0 after 3 scripted and 2 quiet rounds: %d new links in the truth, want 9", n)
	}
	resp, err := http.Get(farm.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "/live/") || !strings.Contains(string(body), "/news/3/a") || strings.Contains(string(body), "/news/4/") {
		t.Errorf("a quiet round serves a transient link or a new one:\n%s", body)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
