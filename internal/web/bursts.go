package web

import (
	"fmt"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// burstSample is how many link texts a burst's feed entry names.
const burstSample = 5

// foldBursts replaces the updates of each burst (one check's redesign
// flood: flagged burst, same page and discovery time) with one entry that
// summarises them, so a feed reader sees one item for a redesign rather
// than dozens. The entry keeps the id, time and URL of the burst's newest
// update, so it is stable across reads. The order of updates is kept.
func foldBursts(updates []watch.Update) []watch.Update {
	type group struct {
		at    int // index in out
		texts []string
		n     int
	}
	out := make([]watch.Update, 0, len(updates))
	groups := map[[2]int64]*group{}
	var order []*group
	for _, u := range updates {
		if !u.Burst {
			out = append(out, u)
			continue
		}
		key := [2]int64{u.PageID, u.DiscoveredAt.UnixMicro()}
		g, ok := groups[key]
		if !ok {
			g = &group{at: len(out)}
			groups[key] = g
			order = append(order, g)
			out = append(out, u)
		}
		g.n++
		if len(g.texts) < burstSample {
			g.texts = append(g.texts, entryTitle(u))
		}
	}
	for _, g := range order {
		u := &out[g.at]
		page := u.PageName
		if page == "" {
			page = fmt.Sprintf("page %d", u.PageID)
		}
		u.Text = fmt.Sprintf("Redesign: %d new links on %s", g.n, page)
		more := ""
		if g.n > len(g.texts) {
			more = fmt.Sprintf("; and %d more", g.n-len(g.texts))
		}
		u.Summary = fmt.Sprintf("%d links appeared at once, as when a page is redesigned: %s%s.", g.n, strings.Join(g.texts, "; "), more)
		u.Article = nil // the entry is the redesign, not its newest link
	}
	return out
}

// entryContent is what a feed entry says beyond its title: the link's
// teaser, else its text.
func entryContent(u watch.Update) string {
	if u.Summary != "" {
		return u.Summary
	}
	return u.Text
}
