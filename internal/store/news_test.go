package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestUpdatesKeepTheLinksSummary(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	at := time.Now()
	if _, err := st.RecordCheck(ctx, ok(page.ID, at), links("https://zeitung.example/alt")); err != nil {
		t.Fatal(err)
	}
	teaser := "Vier Jahre lang kämpfte Don Leonardo Guerri für …"
	l := links("https://zeitung.example/florenz")
	l[0].Text, l[0].Summary = "In Florenz: Priester muss wegen Glockenlärm 2000 Euro Strafe zahlen", teaser
	rec, err := st.RecordCheck(ctx, ok(page.ID, at.Add(time.Second)), l)
	if err != nil || len(rec.Updates) != 1 || rec.Updates[0].Summary != teaser {
		t.Fatalf("RecordCheck = %+v, %v; want one update with the teaser", rec, err)
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if err != nil || len(ups) != 1 || ups[0].Summary != teaser || ups[0].Burst {
		t.Fatalf("Updates = %+v, %v", ups, err)
	}
	q, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID, Limit: 10})
	if err != nil || len(q) != 1 || q[0].Summary != teaser {
		t.Fatalf("QueryUpdates = %+v, %v", q, err)
	}
}

// A change of what a page admits re-baselines it: the next whole check
// records the newly admitted links without updates, and the one after
// reports news again.
func TestOptionsChangeReBaselinesSilently(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	at := time.Now()
	check := func(full bool, ls []watch.NewLink) watch.Recorded {
		t.Helper()
		at = at.Add(time.Second)
		c := ok(page.ID, at)
		c.FullSet, c.LinksDigest = full, fmt.Sprint(at.UnixNano())
		rec, err := st.RecordCheck(ctx, c, ls)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	check(true, numbered("https://zeitung.example/a", 0, 5))
	if _, err := pool.Exec(ctx, `UPDATE pages SET etag = 'v1' WHERE id = $1`, page.ID); err != nil {
		t.Fatal(err)
	}

	name := "Zeitung"
	p, err := st.EditPage(ctx, page.ID, watch.PageEdit{Name: &name})
	if err != nil || p.RebaselinePending {
		t.Fatalf("a name change marked a re-baseline: %+v %v", p, err)
	}
	same := []string{}
	if p, _ = st.EditPage(ctx, page.ID, watch.PageEdit{Ignore: &same}); p.RebaselinePending {
		t.Fatal("setting the ignore list it already had marked a re-baseline")
	}
	within := []string{"main"}
	if p, _ = st.EditPage(ctx, page.ID, watch.PageEdit{Within: &within}); !p.RebaselinePending {
		t.Fatal("a region change did not mark a re-baseline")
	}
	var etag *string
	pool.QueryRow(ctx, `SELECT etag FROM pages WHERE id = $1`, page.ID).Scan(&etag)
	if etag != nil {
		t.Fatalf("etag %q kept: the next check could be a 304 and never see the newly admitted links", *etag)
	}

	// A 304 cannot re-baseline: the flag waits for the whole set.
	if rec := check(false, nil); rec.Rebaseline {
		t.Fatal("a check without the whole link set re-baselined")
	}
	rec := check(true, numbered("https://zeitung.example/b", 0, 30))
	if !rec.Rebaseline || len(rec.Updates) != 0 || rec.Inserted != 30 {
		t.Fatalf("re-baseline check = %+v, want 30 links recorded and no update", rec)
	}
	if p, _ := st.Page(ctx, page.ID); p.RebaselinePending {
		t.Fatal("the re-baseline check did not clear the flag")
	}
	if rec := check(true, numbered("https://zeitung.example/c", 0, 1)); rec.Rebaseline || len(rec.Updates) != 1 {
		t.Fatalf("check after the re-baseline = %+v, want one update", rec)
	}
}

func TestBurstFlagsARedesignFloodUnlessThePageTurnsItOff(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	rule := watch.Burst{Share: 0.5, Min: 20}
	for _, tt := range []struct {
		name      string
		detection bool
		news      int
		wantBurst bool
	}{
		{"flood", true, 40, true},
		{"under the minimum", true, 19, false},
		{"under the share", true, 21 /* of 60 links */, false},
		{"detection off", false, 40, false},
	} {
		page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://redesign.example/" + fmt.Sprint(tt.news, tt.detection)})
		if !tt.detection {
			off := false
			if _, err := st.EditPage(ctx, page.ID, watch.PageEdit{BurstDetection: &off}); err != nil {
				t.Fatal(err)
			}
		}
		at := time.Now()
		old := numbered("https://redesign.example/old", 0, 39)
		if _, err := st.RecordCheck(ctx, ok(page.ID, at), old); err != nil {
			t.Fatal(err)
		}
		ls := append(old, numbered("https://redesign.example/new", 0, tt.news)...)
		c := ok(page.ID, at.Add(time.Second))
		c.Burst, c.Links, c.FullSet = rule, len(ls), true
		rec, err := st.RecordCheck(ctx, c, ls)
		if err != nil || len(rec.Updates) != tt.news || rec.Burst != tt.wantBurst {
			t.Errorf("%s: %d updates, burst %t, err %v; want %d, burst %t", tt.name, len(rec.Updates), rec.Burst, err, tt.news, tt.wantBurst)
			continue
		}
		ups, _ := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
		for _, u := range ups {
			if u.Burst != tt.wantBurst {
				t.Errorf("%s: stored update %s burst %t", tt.name, u.URL, u.Burst)
			}
		}
	}
}
