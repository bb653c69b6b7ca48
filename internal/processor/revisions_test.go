package processor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/prometheus/client_golang/prometheus"
)

// titled is a task of the fixture's page with the links paths under the
// texts texts.
func (f *fixture) titled(paths, texts []string) watch.Task {
	task := watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Status: 200}
	for i, p := range paths {
		task.Context = append(task.Context, watch.Link{URL: "https://portal.example" + p, Text: texts[i]})
	}
	return task
}

// events returns the page's events as "kind url old → new" or "kind
// reason", oldest first.
func (f *fixture) events(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Query(context.Background(), `
		SELECT kind, coalesce(url, ''), coalesce(old_text, ''), coalesce(new_text, ''), coalesce(reason, '')
		FROM events WHERE page_id = $1 ORDER BY id`, f.page.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var events []string
	for rows.Next() {
		var kind, url, old, text, reason string
		if err := rows.Scan(&kind, &url, &old, &text, &reason); err != nil {
			t.Fatal(err)
		}
		if kind == string(watch.LinkRewritten) {
			events = append(events, fmt.Sprintf("%s %s %s → %s", kind, url, old, text))
		} else {
			events = append(events, kind+" "+reason)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func (f *fixture) storedText(t *testing.T, path string) string {
	t.Helper()
	var text string
	if err := f.db.QueryRow(context.Background(), `SELECT text FROM links WHERE page_id = $1 AND url = $2`,
		f.page.ID, "https://portal.example"+path).Scan(&text); err != nil {
		t.Fatal(err)
	}
	return text
}

// wantStormRewrittenAndBack fails t unless the page's events are /a's
// headline rewritten and then changed back, each once.
func (f *fixture) wantStormRewrittenAndBack(t *testing.T) {
	t.Helper()
	want := []string{
		"link.rewritten https://portal.example/a Storm nears → Storm hits the coast",
		"link.rewritten https://portal.example/a Storm hits the coast → Storm nears",
	}
	if got := f.events(t); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A known link whose headline changes is a revision, once, even when the
// check is delivered again; a headline changed back is one more, though
// the seen-set knew that text; the stored text is always the last one.
func TestRewrittenHeadlineIsOneRevision(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Revisions: watch.DefaultRevisionCaps})
	paths := []string{"/a", "/b"}
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"})) // baseline
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	rewritten := f.titled(paths, []string{"Storm hits the coast", "Budget passes"})
	f.deliver(t, rewritten)
	rewritten.FetchedAt = f.clock // the same delivery again
	f.deliver(t, rewritten)
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	f.wantStormRewrittenAndBack(t)
	if text := f.storedText(t, "/a"); text != "Storm nears" {
		t.Errorf("stored text %q, want the last one", text)
	}
	if len(f.updates(t)) != 0 {
		t.Errorf("updates %v: a rewrite is no new link", f.updates(t))
	}
}

// A late redelivery of a check from before a rewrite (the processor killed
// after its commit, before its ack) changes no text and puts none of its
// texts in the seen-set: the old headline coming back is still a rewrite,
// as in the chaos suite's revision that went missing.
func TestStaleCheckKeepsItsTextsOutOfTheSeenSet(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Revisions: watch.DefaultRevisionCaps})
	paths := []string{"/a", "/b"}
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"})) // baseline
	before := f.titled(paths, []string{"Storm nears", "Budget passes"})
	before.FetchedAt = f.clock.Add(time.Second)
	f.deliver(t, before)
	f.deliver(t, f.titled(paths, []string{"Storm hits the coast", "Budget passes"}))
	f.deliver(t, before) // late: older than the rewrite
	if text := f.storedText(t, "/a"); text != "Storm hits the coast" {
		t.Fatalf("stored text %q after a stale check; want the rewrite kept", text)
	}
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	f.wantStormRewrittenAndBack(t)
}

// A redesign that rewrites more headlines than the cap records none, a
// link keeps at most its cap of revisions, a baseline records none, and a
// page watched before texts were kept current updates them silently until
// one check compared all its links.
func TestRevisionCapsAndSilentUpdates(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Revisions: watch.RevisionCaps{PerCheck: 2, PerLink: 2}})
	paths := []string{"/a", "/b", "/c"}
	f.deliver(t, f.titled(paths, []string{"A", "B", "C"}))
	f.deliver(t, f.titled(paths, []string{"A2", "B2", "C2"})) // three: a redesign
	if got := f.events(t); len(got) != 0 {
		t.Fatalf("a redesign recorded %q", got)
	}
	if text := f.storedText(t, "/c"); text != "C2" {
		t.Fatalf("stored text %q after a redesign, want it brought up to date", text)
	}
	for _, text := range []string{"A3", "A4", "A5"} {
		f.deliver(t, f.titled(paths, []string{text, "B2", "C2"}))
	}
	if got := f.events(t); len(got) != 2 || f.storedText(t, "/a") != "A5" {
		t.Fatalf("events %q, text %q; want the link's cap of 2 and its last text", got, f.storedText(t, "/a"))
	}

	// A page from before migration 00022: texts not known to be current.
	if _, err := f.db.Exec(context.Background(), `UPDATE pages SET texts_known = false WHERE id = $1`, f.page.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rdb.FlushDB(context.Background()).Result(); err != nil { // as after the upgrade: no code is known
		t.Fatal(err)
	}
	f.deliver(t, f.titled(paths, []string{"A5", "B-old", "C2"}))
	if got := f.events(t); len(got) != 2 || f.storedText(t, "/b") != "B-old" {
		t.Fatalf("events %q, text %q; want the text updated without a revision", got, f.storedText(t, "/b"))
	}
	f.deliver(t, f.titled(paths, []string{"A5", "B-new", "C2"}))
	if got := f.events(t); len(got) != 3 || got[2] != "link.rewritten https://portal.example/b B-old → B-new" {
		t.Fatalf("events %q, want the revision once the texts are known", got)
	}
}

// A page that turns degraded and healthy again has an event for each turn;
// a change of reason while degraded, a stale check and a redelivery have
// none.
func TestHealthTurnsAreEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	kept := func(n int, paths ...string) watch.Task {
		task := f.task(paths...)
		task.Kept = &n
		return task
	}
	f.deliver(t, kept(2, "/a", "/b"))
	empty := kept(0)
	f.deliver(t, empty)
	empty.FetchedAt = f.clock
	f.deliver(t, empty) // delivered again
	f.deliver(t, watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Status: 403, Error: "HTTP 403"})
	f.deliver(t, kept(2, "/a", "/b"))
	f.deliver(t, watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Status: 429, Error: "HTTP 429"})
	want := []string{"page.degraded no_links", "page.recovered ", "page.degraded blocked"}
	if got := f.events(t); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// An update keeps the headline its link was found with, and says the one
// its page shows now once it was rewritten.
func TestUpdateShowsItsHeadlineNow(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Revisions: watch.DefaultRevisionCaps})
	f.deliver(t, f.titled([]string{"/a"}, []string{"Old story"}))
	f.deliver(t, f.titled([]string{"/a", "/b"}, []string{"Old story", "Ferry strike called"}))
	ups, err := f.st.QueryUpdates(context.Background(), watch.UpdateFilter{})
	if err != nil || len(ups) != 1 || ups[0].CurrentText != "" {
		t.Fatalf("updates %+v, %v; want the new link without a headline of now", ups, err)
	}
	f.deliver(t, f.titled([]string{"/a", "/b"}, []string{"Old story", "Ferry strike called off"}))
	ups, err = f.st.QueryUpdates(context.Background(), watch.UpdateFilter{})
	if err != nil || len(ups) != 1 || ups[0].Text != "Ferry strike called" || ups[0].CurrentText != "Ferry strike called off" {
		t.Fatalf("updates %+v, %v; want the headline found and the one now", ups, err)
	}
}

// failingRemoval is the real seen-set with its removals failing while
// fail is set, as when Redis times out as a check drops its old
// headlines; after each removal that succeeds it calls after, if set.
type failingRemoval struct {
	processor.SeenSet
	fail  atomic.Bool
	after func()
}

func (f *failingRemoval) Remove(ctx context.Context, pageID int64, codes []uint64) error {
	if f.fail.Load() {
		return errors.New("injected: Redis timed out")
	}
	err := f.SeenSet.Remove(ctx, pageID, codes)
	if err == nil && f.after != nil {
		f.after()
	}
	return err
}

// withSeenSet gives the fixture a processor of cfg whose seen-set is the
// real one wrapped as failingRemoval.
func (f *fixture) withSeenSet(t *testing.T, cfg processor.Config) *failingRemoval {
	t.Helper()
	set, err := seen.Open(testsvc.RedisURL(), seen.Config{Prefix: f.pfx, Epoch: "e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	wrapped := &failingRemoval{SeenSet: set}
	svc, err := processor.New(cfg, f.st, wrapped, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return wrapped
}

// A headline changed back after Redis failed to drop its old code is
// still a revision: the page skips the cache until the code is gone.
func TestHeadlineChangedBackAfterAFailedRemoval(t *testing.T) {
	t.Parallel()
	cfg := processor.Config{Revisions: watch.DefaultRevisionCaps}
	f := newFixtureWith(t, "", cfg)
	faulty := f.withSeenSet(t, cfg)
	paths := []string{"/a", "/b"}
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	faulty.fail.Store(true)
	f.deliver(t, f.titled(paths, []string{"Storm hits", "Budget passes"}))
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	if got := f.events(t); len(got) != 2 {
		t.Fatalf("events %q, want the headline changed back recorded by the check that saw it", got)
	}
	faulty.fail.Store(false)
	time.Sleep(1100 * time.Millisecond) // the ledger's next attempt
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	f.deliver(t, f.titled(paths, []string{"Storm hits", "Budget passes"}))
	want := []string{
		"link.rewritten https://portal.example/a Storm nears → Storm hits",
		"link.rewritten https://portal.example/a Storm hits → Storm nears",
		"link.rewritten https://portal.example/a Storm nears → Storm hits",
	}
	if got := f.events(t); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// The old headline's code leaves the seen-set before the check that
// replaced it commits. Were it removed after the commit, a processor killed
// in between (so before its ack) would leave it there, and the headline's
// return to that text would read as seen: the chaos suite once missed a
// revision so. Here the check is cut off right after the removal, as by a
// kill before its commit: it records nothing, its redelivery records the
// rewrite, and the return is a revision too.
func TestOldHeadlineLeavesTheSeenSetBeforeTheCommit(t *testing.T) {
	t.Parallel()
	cfg := processor.Config{Revisions: watch.DefaultRevisionCaps}
	f := newFixtureWith(t, "", cfg)
	set := f.withSeenSet(t, cfg)
	paths := []string{"/a", "/b"}
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))

	rewrite := f.titled(paths, []string{"Storm hits the coast", "Budget passes"})
	rewrite.FetchedAt = f.clock.Add(time.Second)
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	var during string
	set.after = func() {
		during = f.storedText(t, "/a")
		kill()
	}
	body, _ := json.Marshal(rewrite)
	if err := f.svc.Handle(ctx, watch.Delivery{Body: body}); err == nil {
		t.Fatal("Handle of a check cut off before its commit succeeded")
	}
	if during != "Storm nears" {
		t.Fatalf("stored text %q while the old headline left the seen-set; want the rewrite not committed yet", during)
	}
	if text := f.storedText(t, "/a"); text != "Storm nears" {
		t.Fatalf("stored text %q after a check cut off before its commit; want nothing of it kept", text)
	}
	set.after = nil
	f.deliver(t, rewrite) // redelivered
	f.deliver(t, f.titled(paths, []string{"Storm nears", "Budget passes"}))
	f.wantStormRewrittenAndBack(t)
}

// A check's updates draw their ids before its events, so that the
// notifier, which orders a subscription's stream by id, sends them as one
// message.
func TestUpdatesComeBeforeTheEventsOfTheirCheck(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{Revisions: watch.DefaultRevisionCaps})
	paths := []string{"/a", "/b", "/c", "/d"}
	kept := func(texts []string, n int) watch.Task {
		task := f.titled(paths[:n], texts[:n])
		task.Kept = &n
		return task
	}
	f.deliver(t, kept([]string{"A", "B", "C", "D"}, 2))
	f.deliver(t, kept([]string{"A", "B", "C", "D"}, 0)) // degraded
	texts := []string{"A2", "B2", "C", "D"}
	for i := range 30 { // new links, rewrites and the recovery in one check
		paths = append(paths, fmt.Sprintf("/new/%d", i))
		texts = append(texts, fmt.Sprintf("New %d", i))
	}
	f.deliver(t, kept(texts, len(paths)))
	var lastUpdate, firstEvent int64
	if err := f.db.QueryRow(context.Background(), `SELECT (SELECT max(id) FROM updates WHERE page_id = $1),
		(SELECT min(id) FROM events WHERE page_id = $1 AND at = (SELECT max(at) FROM events WHERE page_id = $1))`, f.page.ID).
		Scan(&lastUpdate, &firstEvent); err != nil {
		t.Fatal(err)
	}
	if got := f.events(t); len(got) != 4 {
		t.Fatalf("events %q, want the degradation, two revisions and the recovery", got)
	}
	if firstEvent < lastUpdate {
		t.Fatalf("an event of the check has id %d, below its last update's %d", firstEvent, lastUpdate)
	}
}
