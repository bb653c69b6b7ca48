package web

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// riverScreen is how many updates one screen of a river shows.
const riverScreen = 50

// unreadCountCap is the most unread updates counted: past it the river
// says "1000+" rather than count a long absence exactly.
const unreadCountCap = 1000

// riverItem is one entry of a river: a story, or a redesign collapsed
// into one line (Burst holds its links, Update the first of them).
type riverItem struct {
	watch.Update
	Burst  []watch.Update
	Unread bool
	// SoFar is how long the story has been on its page, for a story the
	// page view knows is still there; empty elsewhere.
	SoFar string
}

// Via names the source a story was seen on first when it is not its
// page's homepage ("feed", "news sitemap"); empty for the homepage.
func (it riverItem) Via() string {
	switch it.Source {
	case watch.SourceFeed:
		return "feed"
	case watch.SourceSitemap:
		return "news sitemap"
	}
	return ""
}

// sourceState says in words what src.Status says in one: what a person
// reads in the page's table of sources.
func sourceState(src watch.Source) string {
	switch src.Status() {
	case "disabled":
		return "no longer offered: discovery has not found it for days"
	case "not_chosen":
		if src.Kind == watch.SourceSitemap {
			return "off: the page is not watched through its news sitemaps"
		}
		return "off: the page is not watched through its feeds"
	case "pending":
		return "first check to come"
	}
	return src.Status()
}

// Published is when the story's feed or sitemap says it was published;
// zero when it says nothing.
func (it riverItem) Published() time.Time {
	if it.PublishedAt == nil {
		return time.Time{}
	}
	return *it.PublishedAt
}

// OnPage says how long the story of it was on its page, or has been so
// far (SoFar); empty when neither is known.
func (it riverItem) OnPage() string {
	if d, ok := it.Dwell(); ok {
		return "On the page for " + watch.HumanDuration(d)
	}
	if it.SoFar != "" {
		return "On the page for " + it.SoFar + " so far"
	}
	return ""
}

// riverView is a screen of updates, newest first, as the start page and a
// page's own page show them.
type riverView struct {
	Items []riverItem
	// Next is the address of the next, older screen; empty on the last.
	Next string
	// Reader says the reader has unread state (signed in with a token);
	// Mark is the cursor of the newest update shown, which "mark all
	// read" marks.
	Reader bool
	Mark   string
	// OnlyUnread says the screen shows only unread updates.
	OnlyUnread bool
	// ByPlace says each check's new links are shown in the order they
	// stood on their page (?sort=place), not newest first.
	ByPlace bool
	mark    watch.Cursor
}

// riverOf reads the screen of updates f selects that r asks for (?cursor=,
// ?unread=1, ?sort=place), with the reader's unread state. path is the
// address of the first screen.
func (s *Server) riverOf(r *http.Request, f watch.UpdateFilter, path string) (riverView, error) {
	q := r.URL.Query()
	var v riverView
	if c := q.Get("cursor"); c != "" {
		after, err := decodeCursor(c)
		if err != nil {
			return v, watch.Refused("cursor", err)
		}
		f.After = after
	}
	if tok, ok := tokenOf(r); ok && s.deps.Reading != nil {
		var err error
		if v.mark, _, err = s.deps.Reading.ReadMark(r.Context(), tok.Name); err != nil {
			return v, err
		}
		v.Reader = true
		if q.Get("unread") == "1" {
			v.OnlyUnread, f.NewerThan = true, v.mark
		}
	}
	f.Limit = riverScreen
	updates, err := s.deps.Updates.QueryUpdates(r.Context(), f)
	if err != nil {
		return v, err
	}
	if len(updates) > 0 {
		v.Mark = encodeCursor(watch.CursorOf(updates[0]))
	}
	if q.Get("sort") == "place" {
		v.ByPlace = true
		sortByPlace(updates)
	}
	v.Items = riverItems(updates, func(u watch.Update) bool { return v.Reader && watch.CursorOf(u).Newer(v.mark) })
	if len(updates) == f.Limit {
		// The cursor is the oldest update of the screen, which sorting by
		// place may have moved from the end.
		oldest := updates[len(updates)-1]
		for _, u := range updates {
			if watch.CursorOf(oldest).Newer(watch.CursorOf(u)) {
				oldest = u
			}
		}
		next := url.Values{}
		for k, vals := range q {
			if k != "cursor" && k != "done" && k != "n" {
				next[k] = vals
			}
		}
		next.Set("cursor", encodeCursor(watch.CursorOf(oldest)))
		v.Next = path + "?" + next.Encode()
	}
	return v, nil
}

// sortByPlace orders the new links of each check (the updates of one page
// found at one time, which the newest-first order keeps together) by their
// position on the page, the ones without a known place last; the checks
// stay newest first. A check split across two screens is sorted on each.
func sortByPlace(updates []watch.Update) {
	for start := 0; start < len(updates); {
		end := start + 1
		for end < len(updates) && updates[end].PageID == updates[start].PageID &&
			updates[end].DiscoveredAt.Equal(updates[start].DiscoveredAt) {
			end++
		}
		slices.SortStableFunc(updates[start:end], func(a, b watch.Update) int {
			return cmp.Compare(placeRank(a.Place), placeRank(b.Place))
		})
		start = end
	}
}

// placeRank is the position of p, or past every position when p is not known.
func placeRank(p watch.Place) int {
	if !p.Known() {
		return math.MaxInt
	}
	return p.Position
}

// riverItems collapses each redesign (updates flagged burst, of one page
// and one check) into one item, keeping the order.
func riverItems(updates []watch.Update, unread func(watch.Update) bool) []riverItem {
	var items []riverItem
	for _, u := range updates {
		if last := len(items) - 1; u.Burst && last >= 0 && items[last].Burst != nil &&
			items[last].PageID == u.PageID && items[last].DiscoveredAt.Equal(u.DiscoveredAt) {
			items[last].Burst = append(items[last].Burst, u)
			items[last].Unread = items[last].Unread || unread(u)
			continue
		}
		item := riverItem{Update: u, Unread: unread(u)}
		if u.Burst {
			item.Burst = []watch.Update{u}
		}
		items = append(items, item)
	}
	return items
}

type riverPageView struct {
	view
	River riverView
	// The filter: text, tag, page (PageName names it).
	Query, Tag string
	PageID     int64
	PageName   string
	Tags       []string
	// Unread counts the reader's unread updates, up to unreadCountCap.
	Unread int
	Error  string
}

// Filtered says the river shows a part of the news, not all of it.
func (v riverPageView) Filtered() bool { return v.Query != "" || v.Tag != "" || v.PageID != 0 }

// UnreadText is the unread count as the river says it.
func (v riverPageView) UnreadText() string {
	if v.Unread >= unreadCountCap {
		return fmt.Sprintf("%d+", unreadCountCap)
	}
	return strconv.Itoa(v.Unread)
}

// uiRiver is the start page: the newest updates of every page, or of a
// tag, a page or a search, with the reader's unread ones marked.
func (s *Server) uiRiver(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := riverPageView{view: s.viewOf(r, "News", "river"), Query: strings.TrimSpace(q.Get("q")), Tag: q.Get("tag")}
	f := watch.UpdateFilter{Text: v.Query, Tag: v.Tag}
	status := http.StatusOK
	err := checkSearch(v.Query)
	if p := q.Get("page"); p != "" && err == nil {
		if v.PageID, err = strconv.ParseInt(p, 10, 64); err != nil || v.PageID <= 0 {
			err = watch.Refused("page", fmt.Errorf("page=%q: want a page's number", p))
		} else {
			var page watch.Page
			if page, err = s.deps.Pages.Page(r.Context(), v.PageID); err == nil {
				f.PageID, v.PageName = page.ID, page.DisplayName()
			}
		}
	}
	if err == nil {
		v.River, err = s.riverOf(r, f, "/")
	}
	if err == nil {
		v.Tags, err = s.deps.Pages.Tags(r.Context())
	}
	if err == nil && v.River.Reader {
		v.Unread, err = s.deps.Reading.CountUnread(r.Context(), v.River.mark, unreadCountCap)
	}
	switch {
	case errors.Is(err, watch.ErrPageNotFound):
		v.Error, status = fmt.Sprintf("No page %d is watched.", v.PageID), http.StatusNotFound
	case watch.RefusalsOf(err) != nil:
		v.Error, status = err.Error(), http.StatusBadRequest
	case err != nil:
		s.fail(w, r, err)
		return
	}
	s.render(w, r, status, "river", v)
}

// checkSearch refuses a search too short for the trigram index.
func checkSearch(q string) error {
	if q != "" && len([]rune(q)) < watch.MinSearchRunes {
		return watch.Refused("q", fmt.Errorf("search for at least %d characters", watch.MinSearchRunes))
	}
	return nil
}

// uiMarkRead marks every update up to the newest the reader saw read: the
// form sends the cursor of the newest one on their screen, so news that
// came in meanwhile stays unread.
func (s *Server) uiMarkRead(w http.ResponseWriter, r *http.Request) {
	tok, ok := tokenOf(r)
	if !ok {
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	mark, err := decodeCursor(r.PostFormValue("mark"))
	if err != nil || mark.IsZero() {
		s.errorPage(w, r, http.StatusBadRequest, "The form did not say up to which update to mark read; reload the page and try again.")
		return
	}
	if err := s.deps.Reading.MarkRead(r.Context(), tok.Name, mark); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, withFlash(localPath(r.PostFormValue("back"), "/"), flashMarkedRead, mark.ID), http.StatusSeeOther)
}

// uiOldUpdates sends the address of the former updates page, bookmarked
// by many, to the river, its filter kept.
func (s *Server) uiOldUpdates(w http.ResponseWriter, r *http.Request) {
	target := "/"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusMovedPermanently)
}

// articleNote is the small label the river shows under a link whose
// article was not read: waiting, behind a paywall, or failed. The other
// outcomes (no article, blocked, capped) say nothing a reader can use.
func articleNote(a *watch.Article) string {
	switch a.Status {
	case watch.ArticlePending:
		return "Article pending"
	case watch.ArticlePaywall:
		return "Article behind a paywall"
	case watch.ArticleError:
		return "Article could not be read"
	}
	return ""
}
