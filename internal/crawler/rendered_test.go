package crawler_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// domFetcher stands for the renderer: it answers every page with a DOM
// and says it was rendered, remembering the selector it was asked to wait
// for.
type domFetcher struct {
	dom     string
	waitFor string
}

func (f *domFetcher) Fetch(_ context.Context, req watch.FetchRequest) (watch.FetchResult, error) {
	f.waitFor = req.WaitFor
	u, _ := url.Parse(req.URL)
	return watch.FetchResult{Status: 200, FinalURL: u, HTML: []byte(f.dom), FetchedAt: time.Now().UTC(), Rendered: true}, nil
}

// A rendered body takes the crawler's path whole: its task says so, the
// page's regions apply to the DOM, the job's selector reaches the
// fetcher, and a DOM without links is a kept count of 0, which the
// processor judges like any other check.
func TestRenderedBodyTakesTheCrawlersPath(t *testing.T) {
	t.Parallel()
	f := &domFetcher{dom: `<!DOCTYPE html><html><body><nav><a href="/about">About</a></nav>` +
		`<main id="news"><h2><a href="/story/1">Story 1</a></h2></main></body></html>`}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, nil, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	job := watch.Job{ID: 7, BaseURL: "https://scripted.example/", Render: true, WaitFor: "#news a",
		Options: &watch.LinkOptions{Within: []string{"#news"}}}
	task := svc.Check(context.Background(), job)
	if !task.Rendered || task.Error != "" || len(task.Context) != 1 || task.Context[0].URL != "https://scripted.example/story/1" {
		t.Fatalf("task %+v; want rendered, the one link inside #news", task)
	}
	if f.waitFor != "#news a" {
		t.Errorf("the fetcher was asked to wait for %q, want the job's selector", f.waitFor)
	}
	f.dom = `<!DOCTYPE html><html><body><main id="news"></main></body></html>`
	task = svc.Check(context.Background(), job)
	if !task.Rendered || task.Kept == nil || *task.Kept != 0 || task.Reading() == nil {
		t.Fatalf("empty rendered DOM gave %+v; want a rendered reading that kept 0 links", task)
	}
}
