package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/portalwatch/portalwatch/internal/watch"
)

type revisionsCmd struct {
	ID    string `arg:"" name:"id" help:"The page's id (see watchctl list)."`
	Limit int    `default:"100" help:"Print at most this many, newest first."`
	JSON  bool   `name:"json" help:"One JSON object per line, the API's revision object: id, page_id, url, old_text, new_text, at."`
}

// Run prints the headline revisions of a page: each time a check saw a
// known link of it under another headline.
func (v *revisionsCmd) Run(c *cli) error {
	id, err := parseID(v.ID)
	if err != nil {
		return err
	}
	if v.Limit <= 0 {
		return usagef("--limit %d: want a positive number", v.Limit)
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	// A page of the list at a time, as watchctl links reads, so that any
	// --limit is served in bounded statements.
	f := watch.RevisionFilter{PageID: id}
	var revs []watch.Revision
	for len(revs) < v.Limit {
		f.Limit = min(v.Limit-len(revs), watch.MaxUpdatesLimit)
		got, err := st.Revisions(c.ctx, f)
		switch {
		case errors.Is(err, watch.ErrPageNotFound):
			return usagef("no watched page has id %d (see `watchctl list`)", id)
		case err != nil:
			return err
		}
		revs = append(revs, got...)
		if len(got) < f.Limit {
			break
		}
		f.Before = got[len(got)-1].ID
	}
	if v.JSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range revs {
			r.At = r.At.UTC()
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(revs) == 0 {
		fmt.Fprintf(c.stdout, "no headline of page %d has changed since it was first seen\n", id)
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "WHEN\tOLD\tNEW\tURL")
	for _, r := range revs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", localTime(&r.At), oneLine(r.OldText), oneLine(r.NewText), r.URL)
	}
	return tw.Flush()
}
