package systest

import (
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
)

// Farm serves a set of portal homepages whose links change on a script, one
// round at a time, and knows the truth: every link that appeared after each
// page's baseline. Every page advances to its next round only once the system
// has durably recorded a successful check of its current round, so a correct
// system must record every link the script ever showed, even links that are
// on a page for one round only. A round that waits longer than the deadline
// is advanced anyway and logged: a system that loses checks misses links.
//
// Page p in round r shows 20 stable links (one of which changes its text
// every round), two permanent links for each round 1..r, and one transient
// link of round r that is gone in round r+1. Links are spelled differently on
// every response (relative, absolute, upper-case scheme, dot segments,
// tracking parameters, fragments), as real portals do.
//
// After QuietAfter(n), rounds past n are quiet: they bring no link, and the
// transient link of round n is gone like the others, so that the links that
// left the page in the last scripted rounds are absent long enough to be
// recorded as removed (RemovalTruth).
type Farm struct {
	srv      *httptest.Server
	mu       sync.Mutex
	pages    []farmPage
	hits     int
	scripted int // the last round that brings links; 0: every round does
	// articles, once ServeArticles is called, counts the requests of each
	// link's URL, which the farm then answers with an article page.
	articles map[string]int
	// sent, once KeepSent is called, holds every body each page served.
	sent map[int][][]byte
}

type farmPage struct {
	round     int
	started   time.Time // when the current round's content was first served
	byTimeout []int     // rounds advanced by the deadline instead of a recorded check
}

// NewFarm starts a farm of n pages on a loopback server.
func NewFarm(t testing.TB, n int) *Farm {
	f := &Farm{pages: make([]farmPage, n)}
	now := time.Now()
	for i := range f.pages {
		f.pages[i].started = now
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is page i's address.
func (f *Farm) URL(i int) string { return fmt.Sprintf("%s/p%d/", f.srv.URL, i) }

// Len is the number of pages.
func (f *Farm) Len() int { return len(f.pages) }

// Round returns page i's current round and when it started.
func (f *Farm) Round(i int) (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pages[i].round, f.pages[i].started
}

// QuietAfter makes the rounds after n quiet (see Farm). Call it before the
// farm serves round n+1.
func (f *Farm) QuietAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripted = n
}

// lastScripted is the last round up to round whose links the page shows;
// call it with f.mu held.
func (f *Farm) lastScripted(round int) int {
	if f.scripted > 0 && round > f.scripted {
		return f.scripted
	}
	return round
}

// Advance moves page i to its next round; byTimeout records that no check of
// the current round was recorded in time.
func (f *Farm) Advance(i int, byTimeout bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.pages[i]
	if byTimeout {
		p.byTimeout = append(p.byTimeout, p.round)
	}
	p.round++
	p.started = time.Now()
}

// lastUnchecked records that page i's last round had no recorded check
// within the deadline.
func (f *Farm) lastUnchecked(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.pages[i]
	if !slices.Contains(p.byTimeout, p.round) {
		p.byTimeout = append(p.byTimeout, p.round)
	}
}

// TimedOutRounds counts rounds advanced by the deadline, and last rounds
// given up on at the deadline.
func (f *Farm) TimedOutRounds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.pages {
		n += len(p.byTimeout)
	}
	return n
}

// Truth returns, for each page, the normalised URLs of every link the script
// showed after the baseline, up to the page's current round.
func (f *Farm) Truth() map[int]map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	truth := map[int]map[string]bool{}
	for i, p := range f.pages {
		set := map[string]bool{}
		for r := 1; r <= f.lastScripted(p.round); r++ {
			for _, l := range roundLinks(i, r) {
				set[f.srv.URL+l.path] = true
			}
		}
		truth[i] = set
	}
	return truth
}

// RemovalTruth returns, for each page, the normalised URLs of the
// transient links that must be recorded as removed when removal takes k
// successful checks without the link (PORTALWATCH_REMOVAL_CHECKS): those
// gone for at least k rounds with a recorded check. Drive moves a page on
// only after a successful check of its round, and every successful check
// counts towards a removal, so such a link is removed however many checks
// each round had. A link gone for fewer recorded rounds may or may not be
// removed yet (a round can have had two checks): unsettled counts them.
// Driving k quiet rounds after the last scripted one (QuietAfter) leaves
// none unsettled, and then the truth is exact; one round more records the
// last of them (CheckRemovals).
func (f *Farm) RemovalTruth(k int) (removed map[int]map[string]bool, unsettled map[int]map[string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	removed, unsettled = map[int]map[string]bool{}, map[int]map[string]bool{}
	for i, p := range f.pages {
		removed[i], unsettled[i] = map[string]bool{}, map[string]bool{}
		unchecked := map[int]bool{}
		for _, r := range p.byTimeout {
			unchecked[r] = true
		}
		for r := 1; r <= f.lastScripted(p.round); r++ {
			url := f.srv.URL + roundLinks(i, r)[2].path
			switch {
			case r == p.round:
				continue // still on the page
			case unchecked[r]:
				unsettled[i][url] = true // maybe never seen
				continue
			}
			gone := 0
			for later := r + 1; later <= p.round; later++ {
				if !unchecked[later] {
					gone++
				}
			}
			if gone >= k {
				removed[i][url] = true
			} else {
				unsettled[i][url] = true
			}
		}
	}
	return removed, unsettled
}

type farmLink struct{ path, text string }

// roundLinks are the links new in round r (r ≥ 1) of page i: two permanent
// and one transient.
func roundLinks(i, r int) []farmLink {
	return []farmLink{
		{fmt.Sprintf("/p%d/news/%d/a", i, r), fmt.Sprintf("Page %d story %d A", i, r)},
		{fmt.Sprintf("/p%d/news/%d/b?id=%d&lang=en", i, r, r), fmt.Sprintf("Page %d story %d B", i, r)},
		{fmt.Sprintf("/p%d/live/%d", i, r), fmt.Sprintf("Page %d live ticker %d", i, r)},
	}
}

// sectionText is the text of stable link j of page i in round: one of them
// changes its text every round (an old link under a new headline: a
// revision, not news).
func sectionText(i, j, round int) string {
	text := fmt.Sprintf("Section %d of page %d", j, i)
	if j == round%20 {
		text += fmt.Sprintf(" (updated in round %d)", round)
	}
	return text
}

// content is page i's links in round; last is f.lastScripted(round).
func (f *Farm) content(i, round, last int) []farmLink {
	var links []farmLink
	for j := range 20 {
		links = append(links, farmLink{fmt.Sprintf("/p%d/section/%d", i, j), sectionText(i, j, round)})
	}
	for r := 1; r <= last; r++ {
		for k, l := range roundLinks(i, r) {
			if k == 2 && r != round {
				continue // the transient link of an earlier round is gone
			}
			links = append(links, l)
		}
	}
	return links
}

// ServeArticles makes the farm answer every link of its pages with an
// article page of its own and count the requests of each (ArticleFetches),
// for the extractor's tests. Until it is called those links are 404s.
func (f *Farm) ServeArticles() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.articles == nil {
		f.articles = map[string]int{}
	}
}

// ArticleFetches returns how many times each link URL (as the farm's origin
// and the request URI) was requested since ServeArticles.
func (f *Farm) ArticleFetches() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.articles))
	for u, n := range f.articles {
		out[u] = n
	}
	return out
}

// serveArticle answers a link of page i with an article, and reports
// whether the request was one.
func (f *Farm) serveArticle(w http.ResponseWriter, r *http.Request) bool {
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/p%d/", &i); err != nil || r.URL.Path == fmt.Sprintf("/p%d/", i) {
		return false
	}
	f.mu.Lock()
	if f.articles == nil {
		f.mu.Unlock()
		return false
	}
	f.articles[f.srv.URL+r.URL.RequestURI()]++
	f.mu.Unlock()
	headline := "Story at " + r.URL.Path
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html><html lang=\"en\"><head><title>%s</title><meta property=\"og:title\" content=\"%s\"></head>"+
		"<body><article><h1>%s</h1><p>%s</p><p>%s</p></article></body></html>\n", headline, headline, headline,
		strings.Repeat("The harbour council met on Tuesday and agreed the budget after a long debate. ", 12),
		strings.Repeat("Residents said the new ferry timetable would help commuters on the island. ", 10))
	return true
}

func (f *Farm) serve(w http.ResponseWriter, r *http.Request) {
	if f.serveArticle(w, r) {
		return
	}
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/p%d/", &i); err != nil || i < 0 || i >= len(f.pages) || r.URL.Path != fmt.Sprintf("/p%d/", i) {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	round := f.pages[i].round
	last := f.lastScripted(round)
	f.hits++
	n := f.hits
	f.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>Portal %d</title></head><body><nav><ul>\n", i)
	for k, l := range f.content(i, round, last) {
		fmt.Fprintf(&b, "<li><article><h2><a href=\"%s\">%s</a></h2></article></li>\n", Spell(l.path, f.srv.URL, n+k), l.text)
	}
	b.WriteString("</ul></nav></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	f.mu.Lock()
	if f.sent != nil {
		f.sent[i] = append(f.sent[i], bytes.Clone(b.Bytes()))
	}
	f.mu.Unlock()
	w.Write(b.Bytes())
}

// KeepSent makes the farm keep every body it serves from now on (Sent).
func (f *Farm) KeepSent() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent == nil {
		f.sent = map[int][][]byte{}
	}
}

// Sent returns the bodies page i served since KeepSent, in order.
func (f *Farm) Sent(i int) [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent[i])
}

// Spell writes the site-relative path on origin ("http://127.0.0.1:4711")
// in the n-th of five equivalent ways that a correct system records as one
// link: as is, absolute, with an upper-case scheme, a dot segment and a
// fragment, with utm_ tracking parameters, with a dot segment and fbclid.
// Portals that test servers serve spell each link by the response and the
// link's place, so every check sees new spellings of old links.
func Spell(path, origin string, n int) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	switch n % 5 {
	case 0:
		return path
	case 1:
		return origin + path
	case 2:
		return strings.Replace(origin, "http://", "HTTP://", 1) + "/." + path + "#c" + strconv.Itoa(n)
	case 3:
		return path + sep + "utm_source=s" + strconv.Itoa(n) + "&utm_medium=web"
	default:
		return "/." + path + sep + "fbclid=" + strconv.Itoa(n*7919)
	}
}

// Register registers the farm's pages with the system through watchctl and
// returns their ids.
func (f *Farm) Register(s *System) ([]int64, error) {
	ids := make([]int64, f.Len())
	for i := range ids {
		out, err := s.Watchctl("add", f.URL(i), "--interval", "10s")
		if err != nil {
			return nil, fmt.Errorf("watchctl add: %v: %s", err, out)
		}
		if _, err := fmt.Sscanf(out, "watching page %d:", &ids[i]); err != nil {
			return nil, fmt.Errorf("watchctl add printed %q", out)
		}
	}
	return ids, nil
}

// Drive advances each registered page (ids from Register) through rounds
// 1..rounds: a page moves on once a successful check fetched after its round
// began is recorded, and at the latest after deadline. It makes an advanced
// page due at once (as if its interval had passed) and returns when every
// page has a recorded check of its last round, or ctx ends.
func (f *Farm) Drive(ctx context.Context, s *System, ids []int64, rounds int, minRound, deadline time.Duration, logf func(string, ...any)) error {
	index := map[int64]int{}
	for i, id := range ids {
		index[id] = i
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		rows, err := s.DB.Query(ctx, `SELECT id, last_checked_at, last_error IS NULL AND baseline_at IS NOT NULL FROM pages`)
		if err != nil {
			logf("farm: read pages: %v (retrying)", err)
			continue
		}
		var due []int64
		finished := 0
		for rows.Next() {
			var (
				id      int64
				checked *time.Time
				okay    bool
			)
			if err := rows.Scan(&id, &checked, &okay); err != nil {
				break
			}
			i, ours := index[id]
			if !ours {
				continue // a page a test registered beside the farm's
			}
			round, started := f.Round(i)
			recorded := okay && checked != nil && !checked.Before(started)
			switch {
			case recorded && round == rounds:
				finished++
			case recorded && time.Since(started) >= minRound:
				f.Advance(i, false)
				due = append(due, id)
			case !recorded && time.Since(started) > deadline:
				logf("farm: page %d round %d not recorded within %s; advancing anyway", i, round, deadline)
				if round < rounds {
					f.Advance(i, true)
				} else {
					f.lastUnchecked(i)
					finished++
				}
				due = append(due, id)
			}
		}
		rows.Close()
		if finished == f.Len() {
			return nil
		}
		if len(due) > 0 {
			if _, err := s.DB.Exec(ctx, `UPDATE pages SET next_check_at = now() WHERE id = ANY($1)`, due); err != nil {
				logf("farm: make pages due: %v", err)
			}
		}
	}
}

// Verdict compares the updates table with the farm's truth.
type Verdict struct {
	Expected, Recorded, Missing, Extra, Duplicates int
	MissingSample, ExtraSample                     []string
}

func (v Verdict) String() string {
	return fmt.Sprintf("expected %d, recorded %d, missing %d, extra %d, duplicates %d",
		v.Expected, v.Recorded, v.Missing, v.Extra, v.Duplicates)
}

// pageIndex maps the system's page ids to the farm's page numbers.
func (f *Farm) pageIndex(ctx context.Context, s *System) (map[int64]int, error) {
	index := map[int64]int{}
	rows, err := s.DB.Query(ctx, `SELECT id, base_url FROM pages`)
	if err != nil {
		return nil, fmt.Errorf("read pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  int64
			url string
			i   int
		)
		if err := rows.Scan(&id, &url); err != nil {
			return nil, fmt.Errorf("read pages: %w", err)
		}
		if !strings.HasPrefix(url, f.srv.URL+"/") {
			// A page a test registered beside the farm's (the hostile
			// pages): not indexed, so any update of it counts as extra.
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimPrefix(url, f.srv.URL), "/p%d/", &i); err != nil {
			return nil, fmt.Errorf("page %d at %s is served by the farm but is none of its pages", id, url)
		}
		index[id] = i
	}
	return index, rows.Err()
}

// Check compares the system's updates with the farm's truth.
func (f *Farm) Check(ctx context.Context, s *System) (Verdict, error) {
	index, err := f.pageIndex(ctx, s)
	if err != nil {
		return Verdict{}, err
	}
	truth := f.Truth()
	var v Verdict
	for _, set := range truth {
		v.Expected += len(set)
	}
	seen := map[string]int{}
	rows, err := s.DB.Query(ctx, `SELECT page_id, url FROM updates`)
	if err != nil {
		return Verdict{}, err
	}
	for rows.Next() {
		var (
			id  int64
			url string
		)
		if err := rows.Scan(&id, &url); err != nil {
			return Verdict{}, err
		}
		v.Recorded++
		i, ours := index[id]
		key := fmt.Sprintf("%d %s", i, url)
		if !ours {
			key = fmt.Sprintf("page %d %s", id, url)
		}
		seen[key]++
		if seen[key] == 2 {
			v.Duplicates++
		}
		if !ours || !truth[i][url] {
			v.Extra++
			if len(v.ExtraSample) < 10 {
				v.ExtraSample = append(v.ExtraSample, key)
			}
		}
	}
	rows.Close()
	for i, set := range truth {
		for url := range set {
			if seen[fmt.Sprintf("%d %s", i, url)] == 0 {
				v.Missing++
				if len(v.MissingSample) < 10 {
					v.MissingSample = append(v.MissingSample, fmt.Sprintf("%d %s", i, url))
				}
			}
		}
	}
	return v, nil
}

// RevisionVerdict compares the system's headline revisions with the ones
// the farm served: every round r rewrites two stable links of each page,
// section r%20 to "(updated in round r)" and section (r-1)%20 back.
type RevisionVerdict struct {
	Expected, Recorded, Missing, Extra, Duplicates int
	MissingSample, ExtraSample                     []string
}

func (v RevisionVerdict) String() string {
	return fmt.Sprintf("revisions: expected %d, recorded %d, missing %d, extra %d, duplicates %d",
		v.Expected, v.Recorded, v.Missing, v.Extra, v.Duplicates)
}

// CheckRevisions compares the system's revisions (link.rewritten events)
// with the rewrites of rounds 1..rounds of every page, each of which must
// have been checked (no round timed out, as Drive reports). Texts name their
// round, so each rewrite is due exactly once.
func (f *Farm) CheckRevisions(ctx context.Context, s *System, rounds int) (RevisionVerdict, error) {
	index, err := f.pageIndex(ctx, s)
	if err != nil {
		return RevisionVerdict{}, err
	}
	truth := map[string]bool{}
	for i := range f.pages {
		for r := 1; r <= rounds; r++ {
			for _, j := range []int{r % 20, (r - 1) % 20} {
				old, text := sectionText(i, j, r-1), sectionText(i, j, r)
				truth[fmt.Sprintf("%d %s/p%d/section/%d %s → %s", i, f.srv.URL, i, j, old, text)] = true
			}
		}
	}
	v := RevisionVerdict{Expected: len(truth)}
	seen := map[string]int{}
	rows, err := s.DB.Query(ctx, `SELECT page_id, url, old_text, new_text FROM events WHERE kind = 'link.rewritten'`)
	if err != nil {
		return RevisionVerdict{}, fmt.Errorf("read revisions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id             int64
			url, old, text string
		)
		if err := rows.Scan(&id, &url, &old, &text); err != nil {
			return RevisionVerdict{}, fmt.Errorf("read revisions: %w", err)
		}
		v.Recorded++
		key := fmt.Sprintf("%d %s %s → %s", index[id], url, old, text)
		if seen[key]++; seen[key] == 2 {
			v.Duplicates++
		}
		if !truth[key] {
			v.Extra++
			if len(v.ExtraSample) < 10 {
				v.ExtraSample = append(v.ExtraSample, key)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return RevisionVerdict{}, fmt.Errorf("read revisions: %w", err)
	}
	for key := range truth {
		if seen[key] == 0 {
			v.Missing++
			if len(v.MissingSample) < 10 {
				v.MissingSample = append(v.MissingSample, key)
			}
		}
	}
	return v, nil
}

// RemovalVerdict compares the removals table with RemovalTruth. Extra
// counts removals of links RemovalTruth neither demands nor leaves
// unsettled; Permanent those of them that never left their page (a stable
// or permanent link), Twice the links removed more than once.
type RemovalVerdict struct {
	Expected, Recorded, Missing, Extra, Permanent, Twice, Unsettled int
	MissingSample, ExtraSample                                      []string
}

func (v RemovalVerdict) String() string {
	return fmt.Sprintf("removals: expected %d, recorded %d, missing %d, extra %d (of them permanent links %d), removed twice %d, unsettled %d",
		v.Expected, v.Recorded, v.Missing, v.Extra, v.Permanent, v.Twice, v.Unsettled)
}

// RemovalsSettle bounds how long CheckRemovals waits for the removals that
// the last checks made due: the claim of each page's next check records
// them (store.ClaimDueQuery), so drive one round more than RemovalTruth
// needs, or leave the scheduler running.
const RemovalsSettle = 15 * time.Second

// CheckRemovals compares the system's removals, with the URLs readers see,
// with RemovalTruth(k), once no page has due removals left to record, or
// RemovalsSettle has passed.
func (f *Farm) CheckRemovals(ctx context.Context, s *System, k int) (RemovalVerdict, error) {
	index, err := f.pageIndex(ctx, s)
	if err != nil {
		return RemovalVerdict{}, err
	}
	for deadline := time.Now().Add(RemovalsSettle); ; time.Sleep(100 * time.Millisecond) {
		var due int
		if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM pages WHERE due_keys IS NOT NULL`).Scan(&due); err != nil {
			return RemovalVerdict{}, fmt.Errorf("count pages with due removals: %w", err)
		}
		if due == 0 || time.Now().After(deadline) {
			break
		}
	}
	truth, unsettled := f.RemovalTruth(k)
	transient := map[string]bool{}
	f.mu.Lock()
	for i, p := range f.pages {
		for r := 1; r <= f.lastScripted(p.round); r++ {
			transient[fmt.Sprintf("%d %s", i, f.srv.URL+roundLinks(i, r)[2].path)] = true
		}
	}
	f.mu.Unlock()
	var v RemovalVerdict
	for i, set := range truth {
		v.Expected += len(set)
		v.Unsettled += len(unsettled[i])
	}
	rows, err := s.DB.Query(ctx, `
		SELECT r.page_id, coalesce(r.url, l.url, '') FROM removals r
		LEFT JOIN links l ON l.page_id = r.page_id AND l.link_key = r.link_key`)
	if err != nil {
		return RemovalVerdict{}, fmt.Errorf("read removals: %w", err)
	}
	defer rows.Close()
	seen := map[string]int{}
	for rows.Next() {
		var (
			id  int64
			url string
		)
		if err := rows.Scan(&id, &url); err != nil {
			return RemovalVerdict{}, fmt.Errorf("read removals: %w", err)
		}
		v.Recorded++
		i := index[id]
		key := fmt.Sprintf("%d %s", i, url)
		if seen[key]++; seen[key] == 2 {
			v.Twice++
		}
		if truth[i][url] || unsettled[i][url] {
			continue
		}
		v.Extra++
		if !transient[key] {
			v.Permanent++
		}
		if len(v.ExtraSample) < 10 {
			v.ExtraSample = append(v.ExtraSample, key)
		}
	}
	if err := rows.Err(); err != nil {
		return RemovalVerdict{}, fmt.Errorf("read removals: %w", err)
	}
	for i, set := range truth {
		for url := range set {
			if key := fmt.Sprintf("%d %s", i, url); seen[key] == 0 {
				v.Missing++
				if len(v.MissingSample) < 10 {
					v.MissingSample = append(v.MissingSample, key)
				}
			}
		}
	}
	return v, nil
}
