//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/extractor"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// extractorConcurrency is how many articles one extractor fetches at once
// in these tests: the most one kill can catch in flight.
const extractorConcurrency = 4

// articleEnv is the extractor's settings in these tests: the shortest
// lease the settings allow, so that work a kill left claimed comes due
// again within the test.
var articleEnv = []string{
	fmt.Sprintf("PORTALWATCH_EXTRACTOR_CONCURRENCY=%d", extractorConcurrency),
	"PORTALWATCH_ARTICLE_LEASE=10s",
	// The farm answers at once; a lease must cover two fetch timeouts.
	"PORTALWATCH_FETCH_TIMEOUT=5s",
	"PORTALWATCH_ARTICLE_POLL=100ms",
}

// articleVerdict compares what the extractor did with what it owed: an
// article attempt for every update of the farm's pages (all of which read
// articles), each link fetched once but for the kills.
type articleVerdict struct {
	Updates, WithArticle, WithoutArticle, WorkLeft int
	NotOK                                          int // attempts whose status is not ok: every farm link is an article
	Fetched, MaxFetches, ExtraFetches              int
	WithoutSample, NotOKSample                     []string
}

func (v articleVerdict) String() string {
	return fmt.Sprintf("updates %d, with an article %d, without %d, work left %d, not ok %d; links fetched %d, most fetches of one %d, extra fetches %d",
		v.Updates, v.WithArticle, v.WithoutArticle, v.WorkLeft, v.NotOK, v.Fetched, v.MaxFetches, v.ExtraFetches)
}

func checkArticles(ctx context.Context, sys *systest.System, farm *systest.Farm) (articleVerdict, error) {
	var v articleVerdict
	rows, err := sys.DB.Query(ctx, `SELECT u.url, a.status FROM updates u
		LEFT JOIN article_links l ON l.url = u.url LEFT JOIN articles a ON a.id = l.article_id`)
	if err != nil {
		return v, err
	}
	for rows.Next() {
		var (
			url    string
			status *string
		)
		if err := rows.Scan(&url, &status); err != nil {
			rows.Close()
			return v, err
		}
		v.Updates++
		switch {
		case status == nil:
			v.WithoutArticle++
			if len(v.WithoutSample) < 5 {
				v.WithoutSample = append(v.WithoutSample, url)
			}
		case *status != string(watch.ArticleOK):
			v.WithArticle++
			v.NotOK++
			if len(v.NotOKSample) < 5 {
				v.NotOKSample = append(v.NotOKSample, url+" "+*status)
			}
		default:
			v.WithArticle++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, err
	}
	if err := sys.DB.QueryRow(ctx, `SELECT count(*) FROM article_work`).Scan(&v.WorkLeft); err != nil {
		return v, err
	}
	for _, n := range farm.ArticleFetches() {
		v.Fetched++
		v.MaxFetches = max(v.MaxFetches, n)
		v.ExtraFetches += n - 1
	}
	return v, nil
}

// waitForArticles waits until no update of the system waits for its
// article, or timeout passes.
func waitForArticles(t *testing.T, sys *systest.System, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := testsvc.Poll(ctx, timeout, 250*time.Millisecond, func() (bool, string, error) {
		var work, without int
		err := sys.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM article_work),
			(SELECT count(*) FROM updates u WHERE NOT EXISTS (SELECT 1 FROM article_links l WHERE l.url = u.url))`).
			Scan(&work, &without)
		return work == 0 && without == 0, fmt.Sprintf("%d links waiting, %d updates without an article", work, without), err
	})
	if err != nil {
		t.Logf("waiting for the articles: %v", err)
	}
}

// kill sends SIGKILL to the program in slot, which the fleet starts again,
// and says whom it killed ("" when it had exited already).
func (f *fleet) kill(slot string) string {
	f.mu.Lock()
	p := f.slots[slot]
	f.killed[p] = true
	f.mu.Unlock()
	select {
	case <-p.Done():
		return ""
	default:
	}
	p.Kill()
	return fmt.Sprintf("%s pid %d", slot, p.Pid())
}

// TestArticlesSurviveKills runs the real programs with articles on while
// the extractor and the processor are SIGKILLed at random moments: every update
// must end with its article attempt (the farm serves an article for every
// link, so each must be ok), no work may be left, and a link may be
// fetched again only for a kill that could have caught it in flight.
func TestArticlesSurviveKills(t *testing.T) {
	const pages, rounds = 20, 10
	w := newWorld(t, servers{sharedQueues: true}, "PORTALWATCH_PROCESSOR_CONCURRENCY=4")
	farm := systest.NewFarm(t, pages)
	farm.ServeArticles()
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{
		"scheduler": "scheduler", "crawler": "crawler", "processor": "processor", "extractor": "extractor",
	}, map[string][]string{"extractor": articleEnv})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	killCtx, stopKills := context.WithCancel(ctx)
	var (
		killer         sync.WaitGroup
		extractorKills atomic.Int64
	)
	killer.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-killCtx.Done():
				return
			case <-time.After(time.Duration(500+rand.IntN(1500)) * time.Millisecond):
			}
			// Two kills in three hit the extractor, the third the processor.
			slot := "extractor"
			if n%3 == 2 {
				slot = "processor"
			}
			if what := w.fleet.kill(slot); what != "" {
				if slot == "extractor" {
					extractorKills.Add(1)
				}
				w.log.add("kill -9 "+slot, "%s", what)
			}
		}
	})
	err = farm.Drive(ctx, w.sys, ids, rounds, 1500*time.Millisecond, 30*time.Second, t.Logf)
	if err != nil {
		stopKills()
		killer.Wait()
		t.Fatalf("driving the farm: %v", err)
	}
	// The last rounds' links are still being read: the kills go on a while.
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	stopKills()
	killer.Wait()
	// The work of the last kill comes due when its lease ends.
	waitForArticles(t, w.sys, 60*time.Second)
	w.fleet.shutdown()
	v, err := farm.Check(ctx, w.sys)
	if err != nil {
		t.Fatal(err)
	}
	av, err := checkArticles(ctx, w.sys, farm)
	if err != nil {
		t.Fatal(err)
	}
	w.report(v, farm)
	kills := int(extractorKills.Load())
	t.Logf("articles: %s; extractor kills %d", av, kills)
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 || v.Expected != pages*rounds*3 {
		t.Errorf("updates differ from the truth: %s", v)
	}
	if av.WithoutArticle != 0 || av.WorkLeft != 0 || av.Updates != v.Expected {
		t.Errorf("updates left without their article attempt: %s (for example %v)", av, av.WithoutSample)
	}
	if av.NotOK != 0 {
		t.Errorf("article attempts that read no article from the farm: %s (for example %v)", av, av.NotOKSample)
	}
	// A kill catches at most extractorConcurrency links in flight, each of
	// which is fetched once more; a link may be caught by every kill.
	if av.MaxFetches > 1+kills || av.ExtraFetches > kills*extractorConcurrency || av.Fetched != v.Expected {
		t.Errorf("fetches beyond what %d kills explain: %s", kills, av)
	}
}

// wrongClaims is the store as an extractor that takes work away when it
// claims it, as a queue that acks on delivery would, instead of leasing
// it: an extractor that dies between the claim and the record loses the
// link. crash is the share of claimed links it "dies" holding. The row is
// put back just before the record so that the right record path runs.
type wrongClaims struct {
	*store.Store
	sys     *systest.System
	crash   float64
	crashes atomic.Int64
}

func (s *wrongClaims) ClaimArticleWork(ctx context.Context, n int, lease time.Duration) ([]watch.ArticleWork, error) {
	work, err := s.Store.ClaimArticleWork(ctx, n, lease)
	if err != nil || len(work) == 0 {
		return work, err
	}
	urls := make([]string, len(work))
	for i, w := range work {
		urls[i] = w.URL
	}
	if _, err := s.sys.DB.Exec(ctx, `DELETE FROM article_work WHERE url = ANY($1)`, urls); err != nil { // WRONG: gone before done
		return nil, err
	}
	kept := work[:0]
	for _, w := range work {
		if rand.Float64() < s.crash {
			s.crashes.Add(1) // simulated death after the claim, before the record
			continue
		}
		kept = append(kept, w)
	}
	return kept, nil
}

func (s *wrongClaims) putBack(ctx context.Context, w watch.ArticleWork) error {
	_, err := s.sys.DB.Exec(ctx, `INSERT INTO article_work (url, page_id, discovered_at) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, w.URL, w.PageID, w.DiscoveredAt)
	return err
}

func (s *wrongClaims) RecordArticle(ctx context.Context, w watch.ArticleWork, o watch.ArticleOutcome) (int64, error) {
	if err := s.putBack(ctx, w); err != nil {
		return 0, err
	}
	return s.Store.RecordArticle(ctx, w, o)
}

func (s *wrongClaims) FinishArticleWork(ctx context.Context, w watch.ArticleWork) error {
	if err := s.putBack(ctx, w); err != nil {
		return err
	}
	return s.Store.FinishArticleWork(ctx, w)
}

// TestNegativeControlClaimWithoutLease runs the same farm and checker with
// an extractor whose claim takes the work away instead of leasing it and
// which dies holding some of it: the checker must find updates without
// their article, or it could not see a loss.
func TestNegativeControlClaimWithoutLease(t *testing.T) {
	const pages, rounds = 10, 4
	w := newWorld(t, servers{sharedQueues: true})
	farm := systest.NewFarm(t, pages)
	farm.ServeArticles()
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{"scheduler": "scheduler", "crawler": "crawler", "processor": "processor"}, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, w.sys.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := testsvc.Logger(t)
	gate, err := hostgate.Open(w.sys.Services.RedisURL, hostgate.Config{Prefix: w.sys.Prefix}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	f, err := fetch.New(fetch.Config{AllowPrivate: true, MaxRedirects: 5, Pacer: gate.PacerFor(watch.ArticleFetch), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wrong := &wrongClaims{Store: st, sys: w.sys, crash: 0.3}
	svc, err := extractor.New(extractor.Config{Concurrency: extractorConcurrency, Poll: 100 * time.Millisecond},
		wrong, f, gate, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var run sync.WaitGroup
	run.Go(func() { svc.Run(ctx, 5*time.Second) })

	driveCtx, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	if err := farm.Drive(driveCtx, w.sys, ids, rounds, 500*time.Millisecond, 20*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	// Every link is claimed (and so gone from the work) within a poll or two.
	testsvc.Eventually(t, 30*time.Second, "every link claimed", func() (bool, error) {
		var n int
		err := w.sys.DB.QueryRow(ctx, `SELECT count(*) FROM article_work`).Scan(&n)
		return n == 0, err
	})
	time.Sleep(time.Second) // the last records land
	cancel()
	run.Wait()
	av, err := checkArticles(context.Background(), w.sys, farm)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("negative control (claim without a lease, %d simulated deaths): %s", wrong.crashes.Load(), av)
	if av.WithoutArticle == 0 {
		t.Fatalf("claiming without a lease lost nothing (%s): the checker cannot see losses", av)
	}
}
