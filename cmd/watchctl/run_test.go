package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

func runCLI(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, e.get, &out, &errOut)
	return code, out.String(), errOut.String()
}

func migrated(t *testing.T) (env, *store.Store) {
	t.Helper()
	dsn := testsvc.Postgres(t)
	e := env{"DATABASE_URL": dsn}
	if code, out, errOut := runCLI(t, e, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return e, st
}

func TestAddRefusesBadURLsWithExitTwoAndWritesNothing(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	tests := []struct {
		url, why string
	}{
		{"example.com/news", "not an absolute URL"},
		{"/news", "not an absolute URL"},
		{"ftp://example.com/", `scheme "ftp"`},
		{"file:///etc/passwd", `scheme "file"`},
		{"javascript:alert(1)", "javascript"},
		{"http:///path", "host"},
		{"http://user:pw@example.com/", "credentials"},
		{"http://127.0.0.1:8080/", "loopback"},
		{"http://10.0.0.7/", "private"},
		{"http://169.254.169.254/latest/meta-data/", "link-local"},
		{"http://2130706433/", "loopback"},
		{"http://[::1]/", "loopback"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, e, "add", tt.url)
		if code != exitUsage {
			t.Errorf("add %s: exit %d, want 2", tt.url, code)
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; lines != 1 || !strings.Contains(strings.ToLower(errOut), strings.ToLower(tt.why)) {
			t.Errorf("add %s: message %q, want one line mentioning %q", tt.url, errOut, tt.why)
		}
	}
	pages, err := st.Pages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 0 {
		t.Fatalf("refused URLs wrote %d pages", len(pages))
	}
}

func TestAddPrivateAllowedAndDuplicates(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	code, out, errOut := runCLI(t, e, "add", "HTTP://127.0.0.1:8080", "--interval", "30s")
	if code != 0 {
		t.Fatalf("add with private addresses allowed: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "watching page 1: http://127.0.0.1:8080/ every 30s") {
		t.Errorf("add printed %q", out)
	}
	// The same page spelled differently is the same page.
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:8080/#top"); code != exitUsage || !strings.Contains(errOut, "already watched") {
		t.Errorf("second add: exit %d %q, want 2 and 'already watched'", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:8081/", "--interval", "5s"); code != exitUsage || !strings.Contains(errOut, "10s") {
		t.Errorf("add with a 5s interval: exit %d %q, want 2 naming the 10s floor", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:8082/", "--ignore", "("); code != exitUsage || !strings.Contains(errOut, "regular expression") {
		t.Errorf("add with a bad pattern: exit %d %q", code, errOut)
	}
	pages, _ := st.Pages(context.Background())
	if len(pages) != 1 || pages[0].Interval != 30*time.Second {
		t.Fatalf("pages = %+v, want the one 30s page", pages)
	}
}

func TestListSetRemoveUpdates(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	runCLI(t, e, "add", "http://127.0.0.1:9/")
	code, out, _ := runCLI(t, e, "list")
	if code != 0 || !strings.Contains(out, "http://127.0.0.1:9/") || !strings.Contains(out, "never") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	code, out, errOut := runCLI(t, e, "set", "1", "--interval", "1m", "--enabled=false", "--same-site", "--ignore", `\?p=`)
	if code != 0 {
		t.Fatalf("set: exit %d %s", code, errOut)
	}
	p, _ := st.Page(context.Background(), 1)
	if p.Interval != time.Minute || p.Enabled || !p.Options.SameSiteOnly || len(p.Options.Ignore) != 1 {
		t.Fatalf("after set: %+v", p)
	}
	if code, _, errOut := runCLI(t, e, "check", "1"); code != exitUsage || !strings.Contains(errOut, "paused") {
		t.Errorf("check of a paused page: exit %d %s, want 2 saying it is paused", code, errOut)
	}
	// "--enabled true" as two words, as people type it.
	if code, _, errOut := runCLI(t, e, "set", "1", "--enabled", "true", "--same-site", "false"); code != 0 {
		t.Fatalf("set --enabled true --same-site false: exit %d %s", code, errOut)
	}
	// Durations as people write them, days included, and shown so.
	if code, _, errOut := runCLI(t, e, "set", "1", "--interval", "1d"); code != 0 {
		t.Errorf("set --interval 1d: exit %d %s", code, errOut)
	}
	if _, out, _ := runCLI(t, e, "list"); !strings.Contains(out, "\t1d\t") && !strings.Contains(out, " 1d ") {
		t.Errorf("list does not show the interval as 1d:\n%s", out)
	}
	if code, out, errOut := runCLI(t, e, "check", "1"); code != 0 || !strings.Contains(out, "due now") {
		t.Errorf("check: exit %d %s%s", code, out, errOut)
	}
	if p, _ := st.Page(context.Background(), 1); time.Until(p.NextCheckAt) > 0 {
		t.Errorf("after check the page is due at %s, want now", p.NextCheckAt)
	}
	p, _ = st.Page(context.Background(), 1)
	if !p.Enabled || p.Options.SameSiteOnly {
		t.Fatalf("after set --enabled true --same-site false: %+v", p)
	}
	if code, _, _ := runCLI(t, e, "set", "1"); code != exitUsage {
		t.Errorf("set with nothing to change: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, e, "set", "99", "--interval", "1m"); code != exitUsage || !strings.Contains(errOut, "no page has id 99") {
		t.Errorf("set of a missing page: exit %d %q", code, errOut)
	}

	// Updates as users read them.
	ctx := context.Background()
	st.RecordCheck(ctx, watch.Check{PageID: 1, FetchedAt: time.Now(), Status: 200}, nil)
	st.RecordCheck(ctx, watch.Check{PageID: 1, FetchedAt: time.Now(), Status: 200},
		[]watch.NewLink{{Key: 1, URL: "http://127.0.0.1:9/new", Text: "Breaking <news> & more", Code: "00000001"}})
	code, out, _ = runCLI(t, e, "updates", "--json", "--since", "1h")
	if code != 0 {
		t.Fatalf("updates --json: exit %d", code)
	}
	var u map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &u); err != nil {
		t.Fatalf("updates --json printed %q: %v", out, err)
	}
	for _, k := range []string{"page_id", "url", "text", "discovered_at"} {
		if _, ok := u[k]; !ok {
			t.Errorf("updates --json lacks %q: %s", k, out)
		}
	}
	if u["text"] != "Breaking <news> & more" || !strings.Contains(out, "<news>") {
		t.Errorf("updates --json text = %v; want it unescaped: %s", u["text"], out)
	}
	if code, _, errOut := runCLI(t, e, "updates", "--since", "yesterday"); code != exitUsage || !strings.Contains(errOut, "--since") {
		t.Errorf("updates --since yesterday: exit %d %q", code, errOut)
	}

	if code, out, _ := runCLI(t, e, "remove", "1"); code != 0 || !strings.Contains(out, "moved page 1") || !strings.Contains(out, "watchctl restore 1") {
		t.Errorf("remove: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "list"); code != 0 || strings.Contains(out, "http://127.0.0.1:9/") {
		t.Errorf("list after remove: exit %d, still lists the page:\n%s", code, out)
	}
	if code, out, _ := runCLI(t, e, "trash"); code != 0 || !strings.Contains(out, "DELETED FOR GOOD") || !strings.Contains(out, "http://127.0.0.1:9/") {
		t.Errorf("trash: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, e, "remove", "1"); code != exitUsage || !strings.Contains(errOut, "watchctl trash") {
		t.Errorf("remove twice: exit %d %q, want 2 pointing at the trash", code, errOut)
	}
	if code, out, _ := runCLI(t, e, "restore", "1"); code != 0 || !strings.Contains(out, "restored page 1") {
		t.Errorf("restore: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, e, "updates", "--page", "1"); code != 0 || !strings.Contains(out, "Breaking") {
		t.Errorf("updates of the restored page: exit %d, its history is gone:\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, e, "restore", "1"); code != exitUsage || !strings.Contains(errOut, "no page 1") {
		t.Errorf("restore twice: exit %d %q, want 2", code, errOut)
	}
	if code, out, _ := runCLI(t, e, "trash"); code != 0 || !strings.Contains(out, "the trash is empty") {
		t.Errorf("trash after restore: exit %d %q", code, out)
	}
	// Adding a trashed URL again restores it.
	runCLI(t, e, "remove", "1")
	if code, out, _ := runCLI(t, e, "add", "http://127.0.0.1:9/"); code != 0 || !strings.Contains(out, "restored page 1") {
		t.Errorf("add of a trashed URL: exit %d %q, want page 1 restored", code, out)
	}
	if code, _, _ := runCLI(t, e, "remove", "abc"); code != exitUsage {
		t.Errorf("remove abc: exit %d, want 2", code)
	}
}

func TestUnknownCommandAndBadConfig(t *testing.T) {
	t.Parallel()
	if code, _, _ := runCLI(t, env{}, "frobnicate"); code != exitUsage {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, env{"PORTALWATCH_ALLOW_PRIVATE": "maybe"}, "list"); code != exitUsage || !strings.Contains(errOut, "PORTALWATCH_ALLOW_PRIVATE") {
		t.Errorf("bad config: exit %d %q", code, errOut)
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := map[string]time.Time{
		"90s":                  now.Add(-90 * time.Second),
		"1h":                   now.Add(-time.Hour),
		"2d":                   now.Add(-48 * time.Hour),
		"2026-11-30T08:00:00Z": time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
	}
	for in, want := range tests {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "-1h", "1x"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) accepted", bad)
		}
	}
}

func TestHelpPrintsAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"add", "--help"}, {"help", "add"}, {"set", "-h"}, {"dead", "list", "--help"}} {
		// No environment at all: help needs no database and no valid config.
		code, out, errOut := runCLI(t, env{"PORTALWATCH_ALLOW_PRIVATE": "maybe"}, args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "Usage: watchctl") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and usage on stdout", args, code, out, errOut)
		}
	}
	_, out, _ := runCLI(t, env{}, "add", "--help")
	for _, want := range []string{"<url>", "--interval", "--same-site", "--ignore", "default 5m"} {
		if !strings.Contains(out, want) {
			t.Errorf("add --help lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCLI(t, env{}); code != exitUsage || !strings.Contains(out, "Commands:") {
		t.Errorf("no arguments: exit %d %q, want 2 and the command list", code, out)
	}
}

func TestUsageErrorsAreOneLineWithExitTwo(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "frobnicate"},
		{[]string{"add"}, "<url>"},
		{[]string{"add", "http://a.example/", "http://b.example/"}, "unexpected argument"},
		{[]string{"add", "http://a.example/", "--interval", "soon"}, "--interval"},
		{[]string{"add", "http://a.example/", "--colour"}, "--colour"},
		{[]string{"set"}, "<id>"},
		{[]string{"set", "1", "--enabled", "perhaps"}, "perhaps"},
		{[]string{"remove"}, "<id>"},
		{[]string{"updates", "3"}, "unexpected argument 3"},
		{[]string{"dead"}, "list"},
		{[]string{"dead", "list", "--queue", "nope"}, "nope"},
		{[]string{"dead", "shred"}, "shred"},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, env{}, tt.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2", tt.args, code)
		}
		if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) || !strings.HasPrefix(errOut, "watchctl") {
			t.Errorf("%q: stdout %q, stderr %q; want one line naming %q", tt.args, out, errOut, tt.want)
		}
	}
}

func TestGoFlagStyle(t *testing.T) {
	parser, err := newParser(io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"set 1 --enabled false", "set 1 --enabled=false"},
		{"set 1 --enabled F --same-site", "set 1 --enabled=false --same-site"},
		{"set 1 -enabled=T", "set 1 --enabled=true"},
		{"set 1 --enabled --interval 1m", "set 1 --enabled --interval=1m"},
		{"add http://x/ --ignore -draft", "add http://x/ --ignore=-draft"},
		{"list -json", "list --json"},
		{"add -- --interval 5m", "add -- --interval 5m"},
		{"add -h", "add -h"},
		{"add --unknown 5", "add --unknown 5"},
	}
	for _, tt := range tests {
		got := strings.Join(goFlagStyle(parser.Model.Node, strings.Fields(tt.in)), " ")
		if got != tt.want {
			t.Errorf("goFlagStyle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A check that left links out shows it in the list, where an operator reads
// a page's status.
func TestListShowsWhatTheLastCheckLeftOut(t *testing.T) {
	t.Parallel()
	e, _ := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/"); code != 0 {
		t.Fatalf("add: exit %d %s", code, errOut)
	}
	db, err := pgxpool.New(context.Background(), e["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(context.Background(),
		`UPDATE pages SET last_checked_at = now(), last_status = 200, last_truncated = 12, last_cut = 30 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, e, "list")
	if code != 0 || !strings.Contains(out, "12 links over the limits") || !strings.Contains(out, "30 new links over the caps") {
		t.Fatalf("list: exit %d, want the cut counts\n%s", code, out)
	}
	code, out, _ = runCLI(t, e, "list", "--json")
	if code != 0 || !strings.Contains(out, `"last_cut":30`) || !strings.Contains(out, `"last_truncated":12`) {
		t.Fatalf("list --json: exit %d, want the cut counts\n%s", code, out)
	}
}

// TestHelpIsPlainAndSaysHowBooleansAreWritten: help once showed two apostrophes as a
// curly quote, and gave no hint that a boolean takes =false.
func TestHelpIsPlainAndSaysHowBooleansAreWritten(t *testing.T) {
	for _, cmd := range [][]string{{"add"}, {"set"}, {"updates"}, {"list"}, {"notify", "add", "webhook"}, {"import"}} {
		var out strings.Builder
		code := run(context.Background(), append(cmd, "--help"), func(string) string { return "" }, &out, &out)
		help := out.String()
		if code != exitOK || strings.ContainsAny(help, "‘’“”") {
			t.Errorf("watchctl %s --help: exit %d, curly quotes in:\n%s", strings.Join(cmd, " "), code, help)
		}
	}
	var out strings.Builder
	run(context.Background(), []string{"set", "--help"}, func(string) string { return "" }, &out, &out)
	for _, want := range []string{"--same-site=true|false", "--enabled=true|false", "--burst-detection=true|false", "--articles=true|false"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("watchctl set --help does not say %s:\n%s", want, out.String())
		}
	}
}
