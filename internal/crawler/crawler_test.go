package crawler_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// recorder is a Publisher that keeps what it is given, or fails.
type recorder struct {
	msgs []watch.Message
	err  error
}

func (r *recorder) Publish(_ context.Context, _ string, msgs ...watch.Message) error {
	if r.err != nil {
		return r.err
	}
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func newService(t *testing.T, pub crawler.Publisher) *crawler.Service {
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestCheckFindsLinksAndAppliesPageOptions(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a?utm_source=x">A</a><a href="/list?page=2">Next</a>
			<a href="https://elsewhere.example/">Out</a><a href="mailto:x@y">Mail</a>`))
	})
	svc := newService(t, &recorder{})
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if task.Failed() || task.Status != 200 || len(task.Context) != 3 {
		t.Fatalf("task = %+v, want 3 links", task)
	}
	if task.Context[0].URL != srv.URL+"/a" || task.Context[0].Text != "A" {
		t.Errorf("first link = %+v, want %s/a without the tracking parameter", task.Context[0], srv.URL)
	}
	task = svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/",
		Options: &watch.LinkOptions{SameSiteOnly: true, Ignore: []string{`[?&]page=`}}})
	if len(task.Context) != 1 || task.Context[0].Text != "A" {
		t.Fatalf("with same-site and an ignore pattern: %+v, want only A", task.Context)
	}
	// A bad pattern in an old row is skipped; the page's others still apply
	// (TestIgnorePatternsOfOldRows).
	task = svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/", Options: &watch.LinkOptions{Ignore: []string{`(`, `[?&]page=`}}})
	if task.Failed() || len(task.Context) != 2 {
		t.Fatalf("a bad ignore pattern beside a good one gave %+v, want the 2 links the good one keeps", task)
	}
}

func TestFailedFetchBecomesATaskWithTheError(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusNotFound) })
	pub := &recorder{}
	svc := newService(t, pub)
	body, _ := json.Marshal(watch.Job{ID: 7, BaseURL: srv.URL + "/missing"})
	if err := svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		t.Fatalf("Handle of a 404 page = %v, want nil: the job is acked", err)
	}
	if len(pub.msgs) != 1 {
		t.Fatalf("published %d tasks, want 1", len(pub.msgs))
	}
	task, err := watch.DecodeTask(pub.msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if task.ID != 7 || task.Status != 404 || task.Error == "" || task.FetchedAt.IsZero() {
		t.Fatalf("task = %+v, want page 7, status 404 and an error", task)
	}
}

func TestJobIsNotAckedWhenTheTaskCannotBePublished(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<a href=/x>x</a>")) })
	svc := newService(t, &recorder{err: errors.New("broker down")})
	body, _ := json.Marshal(watch.Job{ID: 1, BaseURL: srv.URL})
	err := svc.Handle(context.Background(), watch.Delivery{Body: body})
	if err == nil || watch.IsPermanent(err) {
		t.Fatalf("Handle with the broker down = %v, want a retryable error (job returns to the queue)", err)
	}
}

func TestMalformedJobIsPermanent(t *testing.T) {
	t.Parallel()
	svc := newService(t, &recorder{})
	for _, body := range []string{`{`, `{"id":1}`, `{"baseUrl":"http://x/"}`} {
		if err := svc.Handle(context.Background(), watch.Delivery{Body: []byte(body)}); !watch.IsPermanent(err) {
			t.Errorf("Handle(%s) = %v, want a permanent error", body, err)
		}
	}
}

func TestUnchangedLinkSetIsNotSentAgain(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/b">B</a><a href="/a#x">A</a><a href="/a">A again</a>`))
	})
	svc := newService(t, &recorder{})
	digest := shortlink.SetDigest([]string{srv.URL + "/a", srv.URL + "/b"}, []string{"A", "B"})
	followed := &watch.Followed{Checks: 7, Base: watch.Keys{1, 42}, Pending: watch.Keys{5}, PendingSince: []int64{6}}
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/", LinksDigest: digest, Followed: followed})
	if !task.Unchanged || len(task.Context) != 0 || task.Failed() || task.Followed != nil {
		t.Fatalf("same link set: %+v, want an unchanged task without links or following state", task)
	}
	task = svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/", LinksDigest: shortlink.SetDigest([]string{srv.URL + "/a"}, []string{"A"}),
		Followed: followed})
	if task.Unchanged || len(task.Context) != 2 || task.Followed != followed {
		t.Fatalf("a different link set: %+v, want both links sent with the job's following state", task)
	}
	// The same links under another headline: the processor records the
	// revision, so the crawler must send them.
	rewritten := shortlink.SetDigest([]string{srv.URL + "/a", srv.URL + "/b"}, []string{"A", "B before"})
	task = svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/", LinksDigest: rewritten, Followed: followed})
	if task.Unchanged || len(task.Context) != 2 {
		t.Fatalf("a rewritten headline: %+v, want both links sent", task)
	}
}

// A body byte for byte the one the page's recorded links were read from is
// neither decoded nor parsed: the task says unchanged. The digest counts
// only while the links digest stands, and a changed byte reads the page.
func TestSameBodyIsNotParsedAgain(t *testing.T) {
	t.Parallel()
	body := `<title>Front</title><a href="/a">A</a><a href="/b">B</a>`
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(body))
	})
	svc := newService(t, &recorder{})
	ctx := context.Background()
	first := svc.Check(ctx, watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if first.BodyDigest == "" || len(first.Context) != 2 || first.Title != "Front" {
		t.Fatalf("first check: %+v, want its links, title and body digest", first)
	}
	digest := shortlink.SetDigest([]string{srv.URL + "/a", srv.URL + "/b", srv.URL + "/c"}, []string{"A", "B", "C"}) // not the set: only the body can tell
	same := svc.Check(ctx, watch.Job{ID: 1, BaseURL: srv.URL + "/", LinksDigest: digest, BodyDigest: first.BodyDigest,
		Followed: &watch.Followed{Checks: 3}})
	if !same.Unchanged || len(same.Context) != 0 || same.Followed != nil || same.BodyDigest != first.BodyDigest || same.Failed() {
		t.Fatalf("the same body: %+v, want an unchanged task carrying the digest", same)
	}
	if again := svc.Check(ctx, watch.Job{ID: 1, BaseURL: srv.URL + "/", BodyDigest: first.BodyDigest}); again.Unchanged || len(again.Context) != 2 {
		t.Errorf("the same body without a links digest: %+v, want it read (the store cleared the digests)", again)
	}
	body += " "
	changed := svc.Check(ctx, watch.Job{ID: 1, BaseURL: srv.URL + "/", LinksDigest: digest, BodyDigest: first.BodyDigest})
	if changed.Unchanged || len(changed.Context) != 2 || changed.BodyDigest == first.BodyDigest {
		t.Errorf("one byte more: %+v, want the page read and a new digest", changed)
	}
}

// Response strings come from the server: the task carries them cleaned.
func TestTaskCarriesResponseStringsCleaned(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("ETag", "\"v1\u202Eexe\u0085\"")
		w.Write([]byte("<title>Portal\u202E \x01News</title><a href=\"/a\">A</a>"))
	})
	task := newService(t, &recorder{}).Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if task.Failed() || task.ETag != `"v1exe"` {
		t.Fatalf("task ETag = %q (error %q), want \"v1exe\" without the bidi override and the C1 control", task.ETag, task.Error)
	}
	if task.Title != "Portal News" {
		t.Fatalf("task Title = %q, want the page's title cleaned", task.Title)
	}
}
