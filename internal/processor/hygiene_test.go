package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// hostile holds what the network may put in any string: a NUL, an escape
// sequence, a C1 control, a bidi override and a newline.
const hostile = "a\x00b\x1b[2J\u0085\u202Eexe\nnext"

// clean is what hostile must be stored and logged as.
const cleaned = "ab[2Jexe next"

// Every string of a task that came from the network is stored cleaned, one
// field at a time, against the real database.
func TestNetworkStringsAreStoredCleaned(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(*watch.Task)
		read  string // SQL reading the stored value; $1 is the page id
	}{
		{"error", func(task *watch.Task) {
			task.Context, task.Status, task.Error = nil, 0, "x509: certificate is valid for "+hostile
		},
			`SELECT last_error FROM pages WHERE id = $1`},
		{"etag", func(task *watch.Task) { task.ETag = `"` + hostile + `"` }, `SELECT etag FROM pages WHERE id = $1`},
		{"last-modified", func(task *watch.Task) { task.LastModified = hostile }, `SELECT last_modified FROM pages WHERE id = $1`},
		{"link url", func(task *watch.Task) { task.Context[0].URL = "https://portal.example/" + hostile },
			`SELECT url FROM links WHERE page_id = $1 AND url LIKE '%next'`},
		{"link text", func(task *watch.Task) { task.Context[0].Text = hostile }, `SELECT text FROM links WHERE page_id = $1 AND text LIKE '%next'`},
	} {
		t.Run(tc.field, func(t *testing.T) {
			f := newFixture(t, "")
			task := f.task("/a")
			tc.set(&task)
			f.deliver(t, task)
			var got string
			if err := f.db.QueryRow(context.Background(), tc.read, f.page.ID).Scan(&got); err != nil {
				t.Fatalf("read the stored %s: %v", tc.field, err)
			}
			if !strings.Contains(got, cleaned) || strings.ContainsAny(got, "\x00\x1b\u0085\u202E\n") {
				t.Fatalf("stored %s = %q, want it to hold %q and no control or bidi character", tc.field, got, cleaned)
			}
		})
	}
}

// What the processor logs of a task is cleaned too: its URLs and its error.
func TestNetworkStringsAreLoggedCleaned(t *testing.T) {
	f := newFixture(t, "")
	var buf syncBuffer
	svc, err := processor.New(processor.Config{}, f.st, nil, slog.New(slog.NewJSONHandler(&buf, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	task := watch.Task{BaseURL: "https://portal.example/" + hostile, ID: f.page.ID, FinalURL: "https://final.example/" + hostile,
		Error: "tls: " + hostile, FetchedAt: time.Now()}
	body, _ := json.Marshal(task)
	if err := svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, cleaned) {
		t.Fatalf("log does not show the cleaned error:\n%s", out)
	}
	for _, bad := range []string{`\u0000`, `\u001b`, "\u0085", "\u202e", `\n`} {
		if strings.Contains(out, bad) {
			t.Errorf("log carries %q:\n%s", bad, out)
		}
	}
}

// A check PostgreSQL refuses for good still shows on the page as a failure,
// and frees the page's lease, before the task is dead-lettered.
func TestRefusedCheckShowsOnThePageAndFreesTheLease(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	_, err := f.st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour},
		func(context.Context, []watch.Job) ([]watch.Postponed, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	// Whatever PostgreSQL may refuse for good (a value out of range, a
	// constraint), stood in for by a trigger that refuses one link.
	if _, err := f.db.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.url LIKE '%/refused' THEN
				RAISE EXCEPTION 'value refused' USING ERRCODE = '22023';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	body, err := watch.EncodeTask(f.task("/a", "/refused"))
	if err != nil {
		t.Fatal(err)
	}
	err = f.svc.Handle(ctx, watch.Delivery{Body: body})
	if !watch.IsPermanent(err) {
		t.Fatalf("Handle = %v, want a permanent error (dead letter)", err)
	}
	p, _ := f.st.Page(ctx, f.page.ID)
	if !strings.Contains(p.LastError, "refused") || p.ConsecutiveFailures != 1 {
		t.Fatalf("page after a refused check: error %q, failures %d; want the refusal shown", p.LastError, p.ConsecutiveFailures)
	}
	var leased bool
	if err := f.db.QueryRow(ctx, `SELECT lease_until IS NOT NULL FROM pages WHERE id = $1`, f.page.ID).Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased {
		t.Fatal("page still leased after its refused check")
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
