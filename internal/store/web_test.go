package store_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// insertUpdates writes n updates of page at one-second steps ending at last,
// texts "<prefix> i".
func insertUpdates(t *testing.T, pool *pgxpool.Pool, page int64, n int, last time.Time, prefix string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO updates (page_id, url, text, code, link_key, discovered_at)
		SELECT $1::bigint, 'https://example.com/'||$1::bigint||'/'||i, $3::text||' '||i, 'c'||i, $1::bigint*1000000+i,
			$2::timestamptz - (($4::int - i) * interval '1 second')
		FROM generate_series(1, $4) i`, page, last, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreateEditPageKeepsNameAndTags(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/", Name: "News", Tags: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "News" || strings.Join(p.Tags, ",") != "a,b" || p.Interval != watch.DefaultInterval {
		t.Fatalf("created %+v", p)
	}
	if _, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"}); !errors.Is(err, watch.ErrDuplicatePage) {
		t.Fatalf("second create: %v, want ErrDuplicatePage", err)
	}
	name, tags, off := "", []string{"c"}, false
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Name: &name, Tags: &tags, Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "" || p.DisplayName() != "news.example" || strings.Join(p.Tags, ",") != "c" || p.Enabled {
		t.Fatalf("edited %+v", p)
	}
	if _, err := st.EditPage(ctx, p.ID+100, watch.PageEdit{Name: &name}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("edit of a missing page: %v", err)
	}
}

func TestCreatePagesWritesAllOrNothing(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	_, err := st.CreatePages(ctx, []watch.PageSpec{{URL: "https://a.example/"}, {URL: "https://b.example/"}, {URL: "https://a.example/"}})
	if !errors.Is(err, watch.ErrDuplicatePage) || !strings.Contains(err.Error(), "row 3") {
		t.Fatalf("import with a repeated URL: %v, want ErrDuplicatePage naming row 3", err)
	}
	if pages, _ := st.Pages(ctx); len(pages) != 0 {
		t.Fatalf("a failed import left %d pages", len(pages))
	}
	pages, err := st.CreatePages(ctx, []watch.PageSpec{{URL: "https://a.example/"}, {URL: "https://b.example/", Tags: []string{"x"}}})
	if err != nil || len(pages) != 2 {
		t.Fatalf("import: %v %v", pages, err)
	}
}

// TestImportPagesOneAtATime: ImportPages writes every page it is handed or,
// on a URL registered or given twice, none; WatchedAmong finds the URLs
// registered among many, and EachPage reads pages back by id, in id order,
// across its batches.
func TestImportPagesOneAtATime(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	specs := func(urls ...string) iter.Seq[watch.PageSpec] {
		return func(yield func(watch.PageSpec) bool) {
			for _, u := range urls {
				if !yield(watch.PageSpec{URL: u, Tags: []string{"x"}}) {
					return
				}
			}
		}
	}
	_, err := st.ImportPages(ctx, specs("https://a.example/", "https://b.example/", "https://a.example/"))
	if !errors.Is(err, watch.ErrDuplicatePage) || !strings.Contains(err.Error(), "row 3") {
		t.Fatalf("import with a repeated URL: %v, want ErrDuplicatePage naming row 3", err)
	}
	if pages, _ := st.Pages(ctx); len(pages) != 0 {
		t.Fatalf("a failed import left %d pages", len(pages))
	}
	// More than a batch of EachPage (100) and of WatchedAmong (200).
	urls := make([]string, 407)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://p%d.example/", i)
	}
	ids, err := st.ImportPages(ctx, specs(urls...))
	if err != nil || len(ids) != len(urls) {
		t.Fatalf("import of %d pages: %d ids, %v", len(urls), len(ids), err)
	}
	asked := append(slices.Clone(urls[:203]), "https://new.example/")
	watched, err := st.WatchedAmong(ctx, asked)
	if err != nil || len(watched) != 203 || slices.Contains(watched, "https://new.example/") {
		t.Errorf("WatchedAmong of %d URLs: %d watched, %v", len(asked), len(watched), err)
	}
	var read []watch.Page
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	if err := st.EachPage(ctx, append(reversed, ids[len(ids)-1]+1000), func(p watch.Page) error {
		read = append(read, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(read) != len(ids) || read[0].ID != ids[0] || read[len(read)-1].BaseURL != urls[len(urls)-1] || strings.Join(read[5].Tags, ",") != "x" {
		t.Errorf("EachPage read %d pages, want %d in id order", len(read), len(ids))
	}
	stop := errors.New("stop")
	calls := 0
	if err := st.EachPage(ctx, ids, func(watch.Page) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("EachPage whose fn fails: %v after %d calls, want the error after 1", err, calls)
	}
}

func TestQueryUpdatesFiltersAndPagesByKeyset(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	a, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://a.example/", Tags: []string{"news"}})
	b, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://b.example/", Name: "Bee"})
	now := time.Now().Truncate(time.Second)
	insertUpdates(t, pool, a.ID, 25, now, "Alpha")
	insertUpdates(t, pool, b.ID, 25, now.Add(-500*time.Millisecond), "Beta 50%_off")

	// Keyset pages of 7 walk all 50 in order, none twice.
	var all []watch.Update
	var after watch.Cursor
	for range 10 {
		got, err := st.QueryUpdates(ctx, watch.UpdateFilter{Limit: 7, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
		after = watch.CursorOf(got[len(got)-1])
	}
	if len(all) != 50 {
		t.Fatalf("paged through %d updates, want 50", len(all))
	}
	for i := 1; i < len(all); i++ {
		p, c := all[i-1], all[i]
		if c.DiscoveredAt.After(p.DiscoveredAt) || (c.DiscoveredAt.Equal(p.DiscoveredAt) && c.ID >= p.ID) {
			t.Fatalf("updates %d and %d out of order", p.ID, c.ID)
		}
	}
	if all[0].PageName != "a.example" || all[1].PageName != "Bee" {
		t.Errorf("page names %q %q, want the host and the name", all[0].PageName, all[1].PageName)
	}

	count := func(f watch.UpdateFilter) int {
		t.Helper()
		got, err := st.QueryUpdates(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	for name, tt := range map[string]struct {
		f    watch.UpdateFilter
		want int
	}{
		"page":           {watch.UpdateFilter{PageID: b.ID}, 25},
		"tag":            {watch.UpdateFilter{Tag: "news"}, 25},
		"unknown tag":    {watch.UpdateFilter{Tag: "none"}, 0},
		"since":          {watch.UpdateFilter{PageID: a.ID, Since: now.Add(-4 * time.Second)}, 5},
		"until":          {watch.UpdateFilter{PageID: a.ID, Until: now.Add(-19 * time.Second)}, 5},
		"text":           {watch.UpdateFilter{Text: "alpha 2"}, 7}, // 2, 20..25
		"literal %":      {watch.UpdateFilter{Text: "50%_"}, 25},
		"wildcard _":     {watch.UpdateFilter{Text: "a_p"}, 0},
		"limit capped":   {watch.UpdateFilter{Limit: 5000}, 50},
		"limit":          {watch.UpdateFilter{Limit: 3}, 3},
		"page and text":  {watch.UpdateFilter{PageID: b.ID, Text: "alpha"}, 0},
		"tag and cursor": {watch.UpdateFilter{Tag: "news", After: watch.CursorOf(all[0])}, 24},
	} {
		if got := count(tt.f); got != tt.want {
			t.Errorf("%s: %d updates, want %d", name, got, tt.want)
		}
	}
}

func TestFeedStampChangesWithItsScope(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	a, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://a.example/", Tags: []string{"news"}})
	b, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://b.example/"})
	stamp := func(s watch.FeedScope) watch.FeedStamp {
		t.Helper()
		got, err := st.FeedStamp(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	all, tag, pageA := stamp(watch.FeedScope{}), stamp(watch.FeedScope{Tag: "news"}), stamp(watch.FeedScope{PageID: a.ID})
	if all.NewestID != 0 || all.Pages != 2 || tag.Pages != 1 || pageA.PageSum != a.ID {
		t.Fatalf("empty stamps: all %+v tag %+v page %+v", all, tag, pageA)
	}
	insertUpdates(t, pool, b.ID, 3, time.Now(), "b")
	if s := stamp(watch.FeedScope{}); s == all || s.NewestID == 0 {
		t.Errorf("an update of b left the all stamp as it was: %+v", s)
	}
	if s := stamp(watch.FeedScope{Tag: "news"}); s != tag {
		t.Errorf("an update of b changed the news tag's stamp: %+v -> %+v", tag, s)
	}
	name := "A"
	if _, err := st.EditPage(ctx, a.ID, watch.PageEdit{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if s := stamp(watch.FeedScope{PageID: a.ID}); s == pageA {
		t.Errorf("renaming a left its stamp as it was")
	}
	if _, err := st.FeedStamp(ctx, watch.FeedScope{PageID: b.ID + 10}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("stamp of a missing page: %v", err)
	}
}

func TestTokensStoreOnlyAHash(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	if _, err := st.CreateToken(ctx, "reader", "secret-1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateToken(ctx, "reader", "secret-2", true); !errors.Is(err, watch.ErrDuplicateToken) {
		t.Fatalf("second token of one name: %v", err)
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE position('secret-1'::bytea IN hash) > 0`).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("the secret is stored: %d %v", stored, err)
	}
	tok, err := st.VerifyToken(ctx, "secret-1")
	if err != nil || tok.Name != "reader" || tok.Write {
		t.Fatalf("verify: %+v %v", tok, err)
	}
	if _, err := st.VerifyToken(ctx, "secret-2"); !errors.Is(err, watch.ErrTokenNotFound) {
		t.Fatalf("verify of an unknown secret: %v", err)
	}
	list, err := st.Tokens(ctx)
	if err != nil || len(list) != 1 || list[0].LastUsedAt.IsZero() {
		t.Fatalf("list: %+v %v (want one token, used)", list, err)
	}
	if err := st.RevokeToken(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, "reader"); !errors.Is(err, watch.ErrTokenNotFound) {
		t.Fatalf("second revoke: %v", err)
	}
	if _, err := st.VerifyToken(ctx, "secret-1"); !errors.Is(err, watch.ErrTokenNotFound) {
		t.Fatalf("a revoked token still verifies: %v", err)
	}
}

func TestQueryUpdatesOfATagOnManyPages(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	// More pages than are merged one by one: the other plan answers.
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url, tags) SELECT 'https://p'||i||'.example/', '{wide}' FROM generate_series(1, 150) i`); err != nil {
		t.Fatal(err)
	}
	other, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://other.example/"})
	now := time.Now()
	for _, id := range []int64{1, 75, 150, other.ID} {
		insertUpdates(t, pool, id, 3, now, "x")
	}
	for _, tt := range []struct {
		f    watch.UpdateFilter
		want int
	}{
		{watch.UpdateFilter{Tag: "wide"}, 9},
		{watch.UpdateFilter{Tag: "wide", Limit: 4}, 4},
		{watch.UpdateFilter{Tag: "wide", Text: "x 3"}, 3},
	} {
		got, err := st.QueryUpdates(ctx, tt.f)
		if err != nil || len(got) != tt.want {
			t.Errorf("%+v: %d updates, %v; want %d", tt.f, len(got), err, tt.want)
		}
		for _, u := range got {
			if u.PageID == other.ID {
				t.Errorf("%+v: an update of an untagged page", tt.f)
			}
		}
	}
}

// An article arrives after its update: the stamp of a feed that shows the
// update changes when it is stored, and when another update links it, and
// a scope that shows neither keeps its stamp.
func TestFeedStampChangesWhenAnArticleIsStored(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	a, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://a.example/", Tags: []string{"news"}})
	b, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://b.example/", Tags: []string{"other"}})
	at := time.Now().Add(-time.Hour)
	for i, p := range []watch.Page{a, b} {
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: at, Status: 200, Articles: true}, nil); err != nil {
			t.Fatal(err)
		}
		// b's newer update links a story of its own; it shows the first
		// one later.
		link := watch.NewLink{Key: 1, URL: "https://a.example/story", Text: "Story", Code: "s0"}
		if p.ID == b.ID {
			link = watch.NewLink{Key: 2, URL: "https://b.example/own", Text: "Own", Code: "s1"}
		}
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: at.Add(time.Duration(i+1) * time.Minute), Status: 200, Articles: true},
			[]watch.NewLink{link}); err != nil {
			t.Fatal(err)
		}
	}
	scopes := map[string]watch.FeedScope{"all": {Entries: 100}, "tag": {Tag: "news", Entries: 100}, "page": {PageID: a.ID, Entries: 100},
		"other tag": {Tag: "other", Entries: 100}, "one entry of all": {Entries: 1}}
	stamps := func() map[string]watch.FeedStamp {
		t.Helper()
		out := map[string]watch.FeedStamp{}
		for name, s := range scopes {
			got, err := st.FeedStamp(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = got
		}
		return out
	}
	before := stamps()
	// The oldest link first: a's.
	work, err := st.ClaimArticleWork(ctx, 1, time.Hour)
	if err != nil || len(work) != 1 || work[0].PageID != a.ID {
		t.Fatalf("claimed %v, %v; want the work of one update", work, err)
	}
	fetched := time.Now().Truncate(time.Microsecond)
	id, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL,
		Article: watch.Article{Status: watch.ArticleOK, URL: work[0].URL, Headline: "Story", FetchedAt: fetched}})
	if err != nil {
		t.Fatal(err)
	}
	after := stamps()
	for _, name := range []string{"all", "tag", "page"} {
		if s := after[name]; s == before[name] || s.Articles != 1 || s.ArticleSum != id || !s.LastModified().Equal(fetched) {
			t.Errorf("%s: stamp %+v after the article was stored, was %+v", name, s, before[name])
		}
	}
	// b's update is the newest: a feed of one entry shows it, not a's.
	for _, name := range []string{"other tag", "one entry of all"} {
		if after[name] != before[name] {
			t.Errorf("%s: the stamp changed with an article it does not show: %+v -> %+v", name, before[name], after[name])
		}
	}
	later := watch.NewLink{Key: 1, URL: "https://a.example/story", Text: "Story", Code: "s2"}
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: b.ID, FetchedAt: at.Add(3 * time.Minute), Status: 200, Articles: true},
		[]watch.NewLink{later}); err != nil {
		t.Fatal(err)
	}
	if s := stamps()["other tag"]; s == after["other tag"] || s.Articles != 1 {
		t.Errorf("other tag: stamp %+v after its new update linked the known article", s)
	}
}
