package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

func TestServesUntilStoppedAndWaitsForTheSchema(t *testing.T) {
	dsn := testsvc.Postgres(t)
	// Queue names of the test's own, never declared: read-only dead-letter
	// counts of queues that do not exist are 0.
	jobs := "webtest_" + testsvc.ID(t)
	cfg := settingsFrom(t, map[string]string{"DATABASE_URL": dsn, "PORTALWATCH_WEB_PUBLIC_READ": "true", "AMQP_URL": testsvc.AMQPURL(),
		"PORTALWATCH_JOB_QUEUE": jobs, "PORTALWATCH_TASK_QUEUE": jobs + "_tasks"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, ln, testsvc.Logger(t)) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stop: %v", err)
			}
		case <-time.After(cfg.Ops.ShutdownTimeout + 5*time.Second):
			t.Error("the program did not stop")
		}
	}()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The database is empty: the program does not migrate it, and says so.
	if code, body := get("/healthz"); code == 200 || !strings.Contains(body, "postgres") {
		t.Errorf("healthz before migrations: %d %s", code, body)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	// The program backs off on its own clock: poll until it looks again.
	testsvc.Eventually(t, 30*time.Second, "/healthz to answer 200 after the migration", func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the program stopped: %v", err)
		default:
		}
		code, _ := get("/healthz")
		return code == 200, nil
	})
	if code, body := get("/api/v1/pages"); code != 200 || !strings.Contains(body, `"pages":[]`) {
		t.Errorf("pages: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `portalwatch_web_requests_total{code="200",route="GET /api/v1/pages"} 1`) {
		t.Errorf("metrics: %d, without the request counted:\n%s", code, body)
	}
	if code, body := get("/api/v1/dead-letters"); code != 200 || !strings.Contains(body, `"queue":"`+jobs+`.dlq","count":0`) {
		t.Errorf("dead letters: %d %s", code, body)
	}
	// Updates are read through a pool of their own, so that searches
	// never take the connections token checks and writes need.
	if code, body := get("/api/v1/updates?q=abc"); code != 200 {
		t.Errorf("updates: %d %s", code, body)
	}
	var pools []string
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(ctx, `SELECT DISTINCT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'portalwatch web%' ORDER BY 1`)
	if err == nil {
		pools, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || strings.Join(pools, ",") != "portalwatch web,portalwatch web reads" {
		t.Errorf("the web program's pools: %v, %v; want one for reads and one for the rest", pools, err)
	}
}

// With DATABASE_READ_URL, updates are read from the replica and pages from
// the primary, so a page just added shows at once whatever the replica's lag.
func TestReadsUpdatesFromTheReplica(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	primary, replica := testsvc.Postgres(t), testsvc.Postgres(t)
	for _, dsn := range []string{primary, replica} {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	exec := func(dsn, sql string) {
		t.Helper()
		db, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(primary, `INSERT INTO pages (base_url) VALUES ('https://primary.example/')`)
	// The replica holds what the primary wrote before: here, a page and an
	// update the primary no longer lists, so the answer tells which was read.
	exec(replica, `INSERT INTO pages (base_url) VALUES ('https://replica.example/');
		INSERT INTO updates (page_id, link_key, url, text, code) VALUES (1, 7, 'https://replica.example/story', 'From the replica', 'abcdefgh')`)
	jobs := "webtest_" + testsvc.ID(t)
	cfg := settingsFrom(t, map[string]string{"DATABASE_URL": primary, "DATABASE_READ_URL": replica, "PORTALWATCH_WEB_PUBLIC_READ": "true",
		"AMQP_URL": testsvc.AMQPURL(), "PORTALWATCH_JOB_QUEUE": jobs, "PORTALWATCH_TASK_QUEUE": jobs + "_tasks"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, ln, testsvc.Logger(t)) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	get := func(path string) string {
		t.Helper()
		var body string
		testsvc.Eventually(t, 30*time.Second, path+" to answer 200", func() (bool, error) {
			resp, err := http.Get(base + path)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == 200, nil
		})
		return body
	}
	if body := get("/api/v1/updates"); !strings.Contains(body, "From the replica") {
		t.Errorf("updates were not read from the replica: %s", body)
	}
	if body := get("/api/v1/pages"); !strings.Contains(body, "primary.example") || strings.Contains(body, "replica.example") {
		t.Errorf("pages were not read from the primary: %s", body)
	}
}
