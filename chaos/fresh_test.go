//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// The clock farm's rhythm. Its pages are registered with freshInterval; a
// page's round 0 lasts roundOffset from its baseline fetch, and each later
// round lasts freshInterval, so the page's on-time checks (one interval
// apart from the baseline) land in the middle of their rounds.
const (
	freshPages    = 30
	freshInterval = 10 * time.Second
	roundOffset   = freshInterval / 2
	// freshStories is the last round that brings a story; the round after
	// it only rewrites the headlines, and is the last: the farm stays in it.
	freshStories = 5
	freshStable  = 10 // links on every page in every round
)

// clockFarm serves portal homepages on one loopback origin whose content
// follows the clock rather than the system's checks, so a check that comes
// late sees a later round than the one it was due in. Each page's rounds are
// anchored to its own first fetch, its baseline b: round 0 until b+5s, and
// round k from b+5s+(k-1)*10s. Round k shows freshStable stable links and one
// story for each round 1..min(k, freshStories); each story's headline names
// the round it is shown in ("Page 3 story 2, as of round 4"), so a story's
// first recorded headline tells in which round it was first seen. The truth
// is the headline of the round the story appeared in. After round
// freshStories+1 begins, the page stays in it (frozen).
type clockFarm struct {
	srv   *httptest.Server
	mu    sync.Mutex
	pages []clockPage
}

type clockPage struct {
	baseline time.Time   // the page's first fetch; zero until then
	fetches  []time.Time // every fetch of the page, the baseline first
}

func newClockFarm(t *testing.T, n int) *clockFarm {
	f := &clockFarm{pages: make([]clockPage, n)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *clockFarm) url(i int) string { return fmt.Sprintf("%s/p%d/", f.srv.URL, i) }

func (f *clockFarm) storyURL(i, j int) string { return fmt.Sprintf("%s/p%d/story/%d", f.srv.URL, i, j) }

func storyHeadline(i, j, round int) string {
	return fmt.Sprintf("Page %d story %d, as of round %d", i, j, round)
}

// roundAt is the round a page with baseline b shows at time at.
func roundAt(b, at time.Time) int {
	d := at.Sub(b)
	if d < roundOffset {
		return 0
	}
	return min(1+int((d-roundOffset)/freshInterval), freshStories+1)
}

// frozenAt is when a page with baseline b enters its last round.
func frozenAt(b time.Time) time.Time {
	return b.Add(roundOffset + freshStories*freshInterval)
}

func (f *clockFarm) serve(w http.ResponseWriter, r *http.Request) {
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/p%d/", &i); err != nil || i < 0 || i >= len(f.pages) || r.URL.Path != fmt.Sprintf("/p%d/", i) {
		http.NotFound(w, r)
		return
	}
	now := time.Now()
	f.mu.Lock()
	p := &f.pages[i]
	if p.baseline.IsZero() {
		p.baseline = now
	}
	p.fetches = append(p.fetches, now)
	round := roundAt(p.baseline, now)
	f.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>Portal %d</title></head><body><ul>\n", i)
	for s := range freshStable {
		fmt.Fprintf(&b, "<li><a href=\"/p%d/section/%d\">Section %d of page %d</a></li>\n", i, s, s, i)
	}
	for j := 1; j <= min(round, freshStories); j++ {
		fmt.Fprintf(&b, "<li><article><h2><a href=\"/p%d/story/%d\">%s</a></h2></article></li>\n", i, j, storyHeadline(i, j, round))
	}
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// page returns a copy of page i's record.
func (f *clockFarm) page(i int) clockPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pages[i]
	p.fetches = slices.Clone(p.fetches)
	return p
}

// offsets describes page i's fetches as seconds after its baseline, each
// with the round it was shown ("+10.4s r1").
func (f *clockFarm) offsets(i int) string {
	p := f.page(i)
	var parts []string
	for _, at := range p.fetches[min(1, len(p.fetches)):] {
		parts = append(parts, fmt.Sprintf("+%.1fs r%d", at.Sub(p.baseline).Seconds(), roundAt(p.baseline, at)))
	}
	return strings.Join(parts, ", ")
}

// lateAfter is how long after a page's previous check the next one may
// come and still be on time: an interval, plus up to 10% jitter on the first
// reschedule and up to a second of scheduler poll; a deferral adds 5 s or
// more.
const lateAfter = freshInterval + 3*time.Second

// gaps measures each check against the page's check before it (the claim
// anchors one to the other, store.ClaimDueQuery): late counts those that
// came more than lateAfter after it, and gap is the longest wait among the
// others.
func (f *clockFarm) gaps() (onTime, late int, gap time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pages {
		for k := 1; k < len(p.fetches); k++ {
			d := p.fetches[k].Sub(p.fetches[k-1])
			if d > lateAfter {
				late++
				continue
			}
			onTime++
			gap = max(gap, d)
		}
	}
	return onTime, late, gap
}

// freshVerdict compares the updates with the clock farm's truth.
type freshVerdict struct {
	Expected, Recorded, Missing, Extra, Duplicates, WrongHeadline int
	MissingSample, ExtraSample, WrongSample                       []string
	wrongPages                                                    []int
}

func (v freshVerdict) String() string {
	return fmt.Sprintf("expected %d, recorded %d, missing %d, extra %d, duplicates %d, wrong headline %d",
		v.Expected, v.Recorded, v.Missing, v.Extra, v.Duplicates, v.WrongHeadline)
}

func sample(s []string, v string) []string {
	if len(s) < 10 {
		s = append(s, v)
	}
	return s
}

// check reads the updates of the pages (ids[i] is page i) and compares
// them with the truth: every story once, with the headline of its round.
func (f *clockFarm) check(ctx context.Context, sys *systest.System, ids []int64) (freshVerdict, error) {
	index := map[int64]int{}
	for i, id := range ids {
		index[id] = i
	}
	truth := map[string]string{} // "page url" -> headline
	for i := range ids {
		for j := 1; j <= freshStories; j++ {
			truth[fmt.Sprintf("%d %s", i, f.storyURL(i, j))] = storyHeadline(i, j, j)
		}
	}
	v := freshVerdict{Expected: len(truth)}
	rows, err := sys.DB.Query(ctx, `SELECT page_id, url, text FROM updates ORDER BY id`)
	if err != nil {
		return v, fmt.Errorf("read updates: %w", err)
	}
	defer rows.Close()
	seen := map[string]int{}
	wrong := map[int]bool{}
	for rows.Next() {
		var (
			id        int64
			url, text string
		)
		if err := rows.Scan(&id, &url, &text); err != nil {
			return v, fmt.Errorf("read updates: %w", err)
		}
		v.Recorded++
		i, ours := index[id]
		key := fmt.Sprintf("%d %s", i, url)
		if !ours {
			key = fmt.Sprintf("page id %d %s", id, url)
		}
		if seen[key]++; seen[key] == 2 {
			v.Duplicates++
		}
		want, ok := truth[key]
		switch {
		case !ok:
			v.Extra++
			v.ExtraSample = sample(v.ExtraSample, fmt.Sprintf("%s %q", key, text))
		case seen[key] == 1 && text != want:
			v.WrongHeadline++
			v.WrongSample = sample(v.WrongSample, fmt.Sprintf("%q, want %q", text, want))
			if !wrong[i] {
				wrong[i] = true
				v.wrongPages = append(v.wrongPages, i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return v, fmt.Errorf("read updates: %w", err)
	}
	for key := range truth {
		if seen[key] == 0 {
			v.Missing++
			v.MissingSample = sample(v.MissingSample, key)
		}
	}
	slices.Sort(v.MissingSample)
	return v, nil
}

// deferredChecks sums portalwatch_crawler_checks_total{outcome="deferred"}
// over the crawlers' /metrics at addrs.
func deferredChecks(addrs []string) (int, error) {
	total := 0
	for _, addr := range addrs {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return 0, fmt.Errorf("metrics of %s: %w", addr, err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), `portalwatch_crawler_checks_total{outcome="deferred"} `); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					resp.Body.Close()
					return 0, fmt.Errorf("metrics of %s: %q: %w", addr, sc.Text(), err)
				}
				total += int(n)
			}
		}
		err = sc.Err()
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("metrics of %s: %w", addr, err)
		}
	}
	return total, nil
}

// TestOneBusyOriginCheckedOnTime proves that pages sharing one busy origin
// are still checked on time under the programs' defaults, where at most 3
// checks of an origin are in flight at once (PORTALWATCH_HOST_MAX_INFLIGHT)
// and a fleet of 2 crawlers fetches 16 pages at once each: the per-origin
// cap may delay a check by the time the checks before it take, not by
// seconds.
//
// 30 pages on one loopback origin, every 10 s, each show one new story per
// round; a round lasts 10 s, and each page's rounds are anchored to its
// baseline fetch so that its on-time checks fall mid-round (the claim
// anchors each check one interval after the one before, store.ClaimDueQuery,
// plus up to 10% jitter on the first reschedule and up to a second of
// scheduler poll: at most ~2 s late, against 5 s of slack). Each story's
// headline names the round it is shown in, so a story first seen by a check
// that came 5 s or more late is recorded with a later round's headline.
// After freshStories story rounds, one last round rewrites the headlines and
// the farm stays in it, so even the last story's lateness shows; once every
// page has a recorded check of that round, the updates must be exactly the
// stories, each once, with the headline of the round it appeared in.
//
// A crawler that defers a check of a full origin by 5–10 s and hands it
// back to the scheduler (issue 29) fails it with wrong headlines; with the
// cap off (PORTALWATCH_HOST_MAX_INFLIGHT=0) the same pipeline passes, which
// shows the truth is exact for a pipeline that is on time.
//
// The programs run with their defaults (the scheduler's 1 s poll included,
// which systest shortens), a scheduler, two crawlers as make up starts and a
// processor, on the shared services. Only PORTALWATCH_HOST_SPACING=0 differs:
// with the default 1 s spacing, 30 pages every 10 s would ask 3 fetches a
// second of an origin that allows one. The cap of 3 is set explicitly,
// since systest turns it off. It takes about 65 s when checks are on time,
// and up to 95 s when baselines are deferred.
func TestOneBusyOriginCheckedOnTime(t *testing.T) {
	sys := systest.New(t, binDir, systest.Shared(),
		"PORTALWATCH_LOG_LEVEL=info",
		"PORTALWATCH_SCHEDULER_POLL=1s", // the default; systest's is 100ms
		"PORTALWATCH_HOST_SPACING=0",
		"PORTALWATCH_HOST_MAX_INFLIGHT=3",
	)
	farm := newClockFarm(t, freshPages)
	ids := make([]int64, freshPages)
	for i := range ids {
		out, err := sys.Watchctl("add", farm.url(i), "--interval", freshInterval.String())
		if err != nil {
			t.Fatalf("watchctl add: %v: %s", err, out)
		}
		if _, err := fmt.Sscanf(out, "watching page %d:", &ids[i]); err != nil {
			t.Fatalf("watchctl add printed %q", out)
		}
	}
	metrics := []string{freeAddr(t), freeAddr(t)}
	sys.Start("scheduler")
	for _, addr := range metrics {
		sys.Start("crawler", "PORTALWATCH_HTTP_ADDR="+addr)
	}
	sys.Start("processor")
	start := time.Now()

	// Every page must reach its last round and have a check of it recorded:
	// a baseline comes within a few seconds (a deferred one within 10 s
	// more, each time), the last round 55 s after it, its check 5 s later.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := testsvc.Poll(ctx, 2*time.Minute, 250*time.Millisecond, func() (bool, string, error) {
		rows, err := sys.DB.Query(ctx, `SELECT id, last_checked_at FROM pages WHERE last_error IS NULL`)
		if err != nil {
			return false, "", fmt.Errorf("read pages: %w", err)
		}
		checked := map[int64]time.Time{}
		for rows.Next() {
			var (
				id int64
				at *time.Time
			)
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return false, "", fmt.Errorf("read pages: %w", err)
			}
			if at != nil {
				checked[id] = *at
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, "", fmt.Errorf("read pages: %w", err)
		}
		done, baselined := 0, 0
		for i, id := range ids {
			b := farm.page(i).baseline
			if b.IsZero() {
				continue
			}
			baselined++
			if !checked[id].Before(frozenAt(b)) {
				done++
			}
		}
		return done == len(ids), fmt.Sprintf("%d of %d pages fetched, %d of them checked in their last round", baselined, len(ids), done), nil
	})
	if err != nil {
		t.Errorf("waiting for every page's last round to be checked: %v", err)
	}
	var first, last time.Duration
	for i := range ids {
		if b := farm.page(i).baseline; !b.IsZero() {
			d := b.Sub(start)
			if first == 0 || d < first {
				first = d
			}
			last = max(last, d)
		}
	}
	t.Logf("baselines fetched %.1f–%.1fs after the programs started; the wait for every page's last round ended after %.1fs",
		first.Seconds(), last.Seconds(), time.Since(start).Seconds())

	onTime, late, gap := farm.gaps()
	t.Logf("checks after the baselines: %d on time (at most %.2fs after the page's check before), %d more than %s after it",
		onTime, gap.Seconds(), late, lateAfter)
	if n, err := deferredChecks(metrics); err != nil {
		t.Logf("checks deferred: unknown (%v)", err)
	} else {
		t.Logf("checks deferred by the crawlers (outcome=\"deferred\"): %d", n)
	}
	v, err := farm.check(ctx, sys, ids)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict: %s", v)
	if v.Missing == 0 && v.Extra == 0 && v.Duplicates == 0 && v.WrongHeadline == 0 && v.Recorded == v.Expected {
		return
	}
	// One line each, so that make chaos-short, which keeps only the lines
	// that name a test file, shows them all.
	t.Errorf("updates differ from the truth: %s", v)
	if len(v.MissingSample) > 0 {
		t.Errorf("missing, for example: %s", strings.Join(v.MissingSample, "; "))
	}
	if len(v.ExtraSample) > 0 {
		t.Errorf("extra, for example: %s", strings.Join(v.ExtraSample, "; "))
	}
	for _, w := range v.WrongSample {
		t.Errorf("wrong headline (first seen a round or more late): %s", w)
	}
	if len(v.wrongPages) > 0 {
		t.Logf("%d pages have a late story; their checks after the baseline (due every %s, each mid-round), for example:", len(v.wrongPages), freshInterval)
	}
	for _, i := range v.wrongPages[:min(5, len(v.wrongPages))] {
		t.Logf("  page %d: %s", i, farm.offsets(i))
	}
}
