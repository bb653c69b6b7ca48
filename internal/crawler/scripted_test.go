package crawler_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// plainFetcher answers every page with a body, as fetched.
type plainFetcher struct{ domFetcher }

func (f *plainFetcher) Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error) {
	res, err := f.domFetcher.Fetch(ctx, req)
	res.Rendered = false
	return res, err
}

// A plain check of a page with scripts and almost no links suggests
// rendering it; one with links, one without scripts, and a rendered one
// do not.
func TestScriptedPagesSuggestRendering(t *testing.T) {
	t.Parallel()
	job := watch.Job{ID: 3, BaseURL: "https://spa.example/"}
	for _, tt := range []struct {
		name     string
		body     string
		rendered bool
		want     bool
	}{
		{"scripts, one link", `<html><head><SCRIPT src="/app.js"></SCRIPT></head><body><a href="/about">About</a><div id="app"></div></body></html>`, false, true},
		{"scripts, no link", `<div id="root"></div><script>boot()</script>`, false, true},
		{"no script, one link", `<a href="/about">About</a>`, false, false},
		{"scripts, many links", `<script></script>` + links(12), false, false},
		{"rendered", `<script></script><a href="/a">a</a>`, true, false},
	} {
		var f crawler.Fetcher
		if tt.rendered {
			f = &domFetcher{dom: tt.body}
		} else {
			f = &plainFetcher{domFetcher{dom: tt.body}}
		}
		svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, nil, testsvc.Logger(t), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		task := svc.Check(context.Background(), job)
		hint := task.RenderHint()
		if hint == nil || *hint != tt.want {
			t.Errorf("%s: render hint %v (scripted %t), want %t", tt.name, hint, task.Scripted, tt.want)
		}
	}
}

func links(n int) string {
	s := ""
	for i := range n {
		s += `<a href="/story/` + string(rune('a'+i)) + `">story</a>`
	}
	return s
}
