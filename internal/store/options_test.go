package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestPageOptionsReachTheJobAndEditsReplaceOneList(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	opts := watch.LinkOptions{Within: []string{"#latest-news"}, Exclude: []string{"nav", "footer"},
		IncludeText: []string{"(?i)florenz"}, ExcludeText: []string{"^Anzeige"},
		IncludeURL: []string{"/politik/"}, ExcludeURL: []string{`\?ticker=`}}
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Options, withIgnore(opts)) || !p.BurstDetection || p.RebaselinePending {
		t.Fatalf("created page options %+v burst %t rebaseline %t", p.Options, p.BurstDetection, p.RebaselinePending)
	}

	var jobs []watch.Job
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, jobs %v", err, jobs)
	}
	if got := jobs[0].Options; got == nil || !reflect.DeepEqual(*got, opts) {
		t.Fatalf("job options = %+v, want %+v", got, opts)
	}

	none := []string{}
	off := false
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Within: &none, BurstDetection: &off})
	if err != nil {
		t.Fatal(err)
	}
	want := withIgnore(opts)
	want.Within = []string{}
	if !reflect.DeepEqual(p.Options, want) || p.BurstDetection {
		t.Fatalf("edited options %+v burst %t, want %+v and burst off", p.Options, p.BurstDetection, want)
	}
}

func TestJobOfAPageWithoutOptionsCarriesNone(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	if _, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://plain.example/"}); err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, jobs %v", err, jobs)
	}
	if jobs[0].Options != nil {
		t.Fatalf("job options = %+v, want none", jobs[0].Options)
	}
}

// withIgnore returns o as the store reads it back: every list non-nil.
func withIgnore(o watch.LinkOptions) watch.LinkOptions {
	for _, l := range []*[]string{&o.Ignore, &o.Within, &o.Exclude, &o.IncludeText, &o.ExcludeText, &o.IncludeURL, &o.ExcludeURL} {
		if *l == nil {
			*l = []string{}
		}
	}
	return o
}
