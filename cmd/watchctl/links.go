package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

type linksCmd struct {
	ID      string `arg:"" name:"id" help:"The page's id (see watchctl list)."`
	Removed bool   `help:"List the links taken down from the page (by latest removal) instead of those on it now."`
	Limit   int    `default:"100" help:"Print at most this many, newest first."`
	JSON    bool   `name:"json" help:"One JSON object per line, the API's link object: url, text, code, first_seen_at, last_seen_at, removed_at (--removed) and dwell_seconds."`
}

// Run prints the links of a page with their time on it: how long a link
// taken down was there, and how long one still there has been so far.
func (l *linksCmd) Run(c *cli) error {
	id, err := parseID(l.ID)
	if err != nil {
		return err
	}
	if l.Limit <= 0 {
		return usagef("--limit %d: want a positive number", l.Limit)
	}
	f := watch.LinkFilter{PageID: id, State: watch.LinksCurrent}
	if l.Removed {
		f.State = watch.LinksRemoved
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	// A page of the list at a time, so that any --limit is served in
	// bounded statements.
	var links []watch.PageLink
	for len(links) < l.Limit {
		f.Limit = min(l.Limit-len(links), watch.MaxUpdatesLimit)
		got, err := st.PageLinks(c.ctx, f)
		switch {
		case errors.Is(err, watch.ErrPageNotFound):
			return usagef("no watched page has id %d (see `watchctl list`)", id)
		case errors.Is(err, watch.ErrPageNotFollowed):
			return fmt.Errorf("page %d: %w; `watchctl links %d --removed` lists the links taken down from it", id, watch.ErrPageNotFollowed, id)
		case err != nil:
			return err
		}
		links = append(links, got...)
		if len(got) < f.Limit {
			break
		}
		f.After = got[len(got)-1].Cursor
	}
	if l.JSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		for _, link := range links {
			if err := enc.Encode(link.Published()); err != nil {
				return err
			}
		}
		return nil
	}
	if len(links) == 0 {
		if l.Removed {
			fmt.Fprintf(c.stdout, "no link has been taken down from page %d\n", id)
		} else {
			fmt.Fprintf(c.stdout, "page %d has no links yet: its first successful check records them\n", id)
		}
		return nil
	}
	tw := newTable(c.stdout)
	if l.Removed {
		fmt.Fprintln(tw, "REMOVED\tON THE PAGE FOR\tTEXT\tURL")
	} else {
		fmt.Fprintln(tw, "FIRST SEEN\tON THE PAGE FOR\tTEXT\tURL")
	}
	for _, link := range links {
		at := link.FirstSeenAt
		if l.Removed {
			at = link.RemovedAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", localTime(at), dwellCell(link), oneLine(link.Text), link.URL)
	}
	return tw.Flush()
}

// localTime is t in the local zone to the second, "-" when unknown.
func localTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// dwellCell says the time on the page of a link: "3 h 20 min", "2 h so
// far" while it is there, "-" when its first sighting is forgotten.
func dwellCell(l watch.PageLink) string {
	if l.DwellSeconds == nil {
		return "-"
	}
	text := watch.HumanDuration(time.Duration(*l.DwellSeconds) * time.Second)
	if l.RemovedAt == nil {
		text += " so far"
	}
	return text
}
