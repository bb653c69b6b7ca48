package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

type sourcesCmd struct {
	ID   string `arg:"" name:"id" help:"The page's id (see watchctl list)."`
	JSON bool   `name:"json" help:"One JSON object per line."`
}

// Run lists the page's feeds and news sitemaps with the state of their
// checks.
func (s *sourcesCmd) Run(c *cli) error {
	id, err := parseID(s.ID)
	if err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	page, err := st.Page(c.ctx, id)
	if errors.Is(err, watch.ErrPageNotFound) {
		return usagef("no page has id %d (see `watchctl list`)", id)
	}
	if err != nil {
		return err
	}
	sources, err := st.Sources(c.ctx, id)
	if err != nil {
		return err
	}
	if s.JSON {
		enc := json.NewEncoder(c.stdout)
		for _, src := range sources {
			if err := enc.Encode(struct {
				watch.Source
				Status string `json:"status"`
			}{src, src.Status()}); err != nil {
				return err
			}
		}
		return nil
	}
	discovered := "not yet"
	switch {
	case page.SourcesDiscoveryError != "":
		discovered = "failed, tried again within the hour: " + page.SourcesDiscoveryError
	case !page.SourcesDiscoveredAt.IsZero():
		discovered = page.SourcesDiscoveredAt.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(c.stdout, "page %d: sources %s; last discovery %s\n", page.ID, strings.Join(page.Sources, ","), discovered)
	if len(sources) == 0 {
		if !watch.HasBeyondHomepage(page.Sources) {
			fmt.Fprintf(c.stdout, "page %d is watched through its homepage alone: `watchctl set %d --sources homepage,feeds,sitemaps` adds its feeds and news sitemaps\n", id, id)
		} else {
			fmt.Fprintln(c.stdout, "no feed or news sitemap found yet (`watchctl discover URL` shows what the page offers)")
		}
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tLAST CHECK\tHTTP\tFAILURES\tTITLE\tURL\tERROR")
	for _, src := range sources {
		last, status := "never", "-"
		if src.LastCheckedAt != nil {
			last = src.LastCheckedAt.Local().Format("2006-01-02 15:04:05")
			status = strconv.Itoa(src.LastStatus)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", src.ID, src.Kind, src.Status(), last, status, src.ConsecutiveFailures,
			oneLine(src.Title), src.URL, oneLine(src.LastError))
	}
	return tw.Flush()
}
