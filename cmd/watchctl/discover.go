package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
)

type discoverCmd struct {
	URL  string `arg:"" help:"The homepage to look at."`
	JSON bool   `name:"json" help:"Print JSON, for scripts."`
}

// Run fetches the page, its feeds and the sitemaps its robots.txt names,
// with the crawler's client and rules: the address guard (loopback and
// private addresses only with PORTALWATCH_ALLOW_PRIVATE), robots.txt, one
// fetch a second per origin.
func (d *discoverCmd) Run(c *cli) error {
	if err := c.policy.GuardURL(c.ctx, d.URL); err != nil {
		return usagef("%v", err)
	}
	client, err := fetch.New(fetch.Config{
		AllowPrivate:   c.cfg.AllowPrivate,
		MaxRedirects:   fetch.DefaultMaxRedirects,
		MinHostSpacing: fetch.DefaultMinHostSpacing,
	})
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	res, err := discover.Discover(c.ctx, client, d.URL, discover.DefaultLimits)
	if err != nil {
		return fmt.Errorf("discover %s: %w", d.URL, err)
	}
	if d.JSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if len(res.Sources) == 0 {
		fmt.Fprintf(c.stdout, "%s links no feed, and its robots.txt names no sitemap\n", d.URL)
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "KIND\tITEMS\tVIA\tURL\tTITLE OR ERROR")
	for _, s := range res.Sources {
		items, note := strconv.Itoa(s.Items), s.Title
		if s.Error != "" {
			items, note = "-", s.Error
		}
		kind := s.Kind
		if s.Format != "" {
			kind += " (" + s.Format + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kind, items, s.Via, s.URL, note)
	}
	return tw.Flush()
}
