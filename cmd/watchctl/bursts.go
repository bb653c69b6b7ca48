package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

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

// printUpdates prints updates as a table; a burst is one line saying how
// many new links the redesign brought, followed by them when expand is set.
func printUpdates(w io.Writer, updates []watch.Update, expand bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DISCOVERED\tPAGE\tTEXT\tURL")
	for _, e := range groupBursts(updates) {
		at := e.first.DiscoveredAt.Local().Format("2006-01-02 15:04:05")
		if !e.first.Burst {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", at, e.first.PageID, oneLine(e.first.Text), e.first.URL)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\tredesign: %d new links on page %d at %s\t(--expand lists them)\n",
			at, e.first.PageID, len(e.members), e.first.PageID, at)
		if expand {
			for _, u := range e.members {
				fmt.Fprintf(tw, "\t\t  %s\t%s\n", oneLine(u.Text), u.URL)
			}
		}
	}
	return tw.Flush()
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
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REMOVED\tPAGE\tTEXT\tURL")
	for _, m := range removals {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.RemovedAt.Local().Format("2006-01-02 15:04:05"), m.PageID, oneLine(m.Text), m.URL)
	}
	return tw.Flush()
}
