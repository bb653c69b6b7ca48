package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// updateEvent is what watchctl updates prints as one line: a single update,
// or every update of one check flagged burst (a redesign flood), which
// share their page and discovery time because one statement recorded them.
type updateEvent struct {
	first   watch.Update
	members []watch.Update // more than one only for a burst
}

// groupBursts folds the burst updates of each check into one event, in the
// newest-first order of updates.
func groupBursts(updates []watch.Update) []updateEvent {
	var events []updateEvent
	index := map[[2]int64]int{}
	for _, u := range updates {
		if !u.Burst {
			events = append(events, updateEvent{first: u, members: []watch.Update{u}})
			continue
		}
		key := [2]int64{u.PageID, u.DiscoveredAt.UnixMicro()}
		if i, ok := index[key]; ok {
			events[i].members = append(events[i].members, u)
			continue
		}
		index[key] = len(events)
		events = append(events, updateEvent{first: u, members: []watch.Update{u}})
	}
	return events
}

// queryEvents reads the newest limit events f selects: updates, a burst
// counting as one with every one of its updates, however many pages of
// results that takes, so that a redesign's line says how many links it
// really brought.
func queryEvents(ctx context.Context, st *store.Store, f watch.UpdateFilter, limit int) ([]updateEvent, error) {
	var all []watch.Update
	f.Limit = watch.MaxUpdatesLimit
	for {
		page, err := st.QueryUpdates(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		// One event more than asked for proves the last one asked for is
		// whole: its burst ended before the next event.
		if events := groupBursts(all); len(events) > limit || len(page) < f.Limit {
			return events[:min(limit, len(events))], nil
		}
		f.After = watch.CursorOf(page[len(page)-1])
	}
}

// printEvents prints events as a table; a burst is one line saying how
// many new links the redesign brought, followed by them when expand is set.
func printEvents(w io.Writer, events []updateEvent, expand bool) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DISCOVERED\tPUBLISHED\tPAGE\tPLACE\tTEXT\tURL")
	for _, e := range events {
		at := e.first.DiscoveredAt.Local().Format("2006-01-02 15:04:05")
		page := fmt.Sprintf("%d %s", e.first.PageID, oneLine(e.first.PageName))
		if !e.first.Burst {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", at, updatePublished(e.first), page, updatePlace(e.first),
				oneLine(e.first.Text), e.first.URL)
			continue
		}
		fmt.Fprintf(tw, "%s\t-\t%s\t-\tredesign: %d new %s on page %d at %s\t(--expand lists them)\n",
			at, page, len(e.members), plural(len(e.members), "link", "links"), e.first.PageID, at)
		if expand {
			for _, u := range e.members {
				fmt.Fprintf(tw, "\t\t\t%s\t  %s\t%s\n", placeCell(u.Place), oneLine(u.Text), u.URL)
			}
		}
	}
	return tw.Flush()
}

// placeCell says where an update's link stood on its page, in the PLACE
// column: "#3 main h2" (position, landmark unless none, heading level
// unless none), or "-" when not known.
func placeCell(p watch.Place) string {
	if !p.Known() {
		return "-"
	}
	return strings.ReplaceAll(p.Label(), " · ", " ")
}

// updatePlace is the PLACE cell of an update: where it stood on its
// homepage, or "via feed" or "via sitemap" for a story a source saw first.
func updatePlace(u watch.Update) string {
	if u.Source != "" && u.Source != watch.SourceHomepage {
		return "via " + u.Source
	}
	return placeCell(u.Place)
}

// updatePublished is the PUBLISHED cell of an update: its article's date,
// else the date its feed or sitemap states, else what publishedCell says.
// A stated date outranks an article that failed or is no article: the
// analyst wants the story's time, and the article's outcome has its own
// place in `watchctl updates --json` and the web page.
func updatePublished(u watch.Update) string {
	if u.Article != nil && u.Article.Status == watch.ArticleOK {
		if t, ok := u.Article.Published(); ok {
			return t.Local().Format("2006-01-02 15:04")
		}
	}
	if u.PublishedAt != nil {
		return u.PublishedAt.Local().Format("2006-01-02 15:04")
	}
	return publishedCell(u.Article)
}

// publishedCell says when an update's article says it was published, in
// the PUBLISHED column: its time, "pending" while the extractor has yet to
// read it, the outcome when it was no article, or "-" when the page reads
// no articles or the article states no date.
func publishedCell(a *watch.Article) string {
	switch {
	case a == nil:
		return "-"
	case a.Status == watch.ArticleOK:
		if t, ok := a.Published(); ok {
			return t.Local().Format("2006-01-02 15:04")
		}
		return "-"
	}
	return string(a.Status)
}

// printRemovals prints the links removed from their pages that f selects,
// newest first.
func (u *updatesCmd) printRemovals(c *cli, st *store.Store, f watch.RemovalFilter) error {
	removals, err := st.Removals(c.ctx, f)
	if err != nil {
		return err
	}
	if u.JSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		for _, m := range removals {
			m.RemovedAt = m.RemovedAt.UTC()
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "REMOVED\tPAGE\tON THE PAGE FOR\tSNAPSHOT\tTEXT\tURL")
	for _, m := range removals {
		dwell, snapshot := "-", "-"
		if m.DwellSeconds != nil {
			dwell = watch.HumanDuration(time.Duration(*m.DwellSeconds) * time.Second)
		}
		if m.SnapshotID != nil {
			snapshot = strconv.FormatInt(*m.SnapshotID, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", m.RemovedAt.Local().Format("2006-01-02 15:04:05"), m.PageID, dwell, snapshot,
			oneLine(m.Text), m.URL)
	}
	return tw.Flush()
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
