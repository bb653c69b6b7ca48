package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// sourcesCmd lists a page's sources (`watchctl sources PAGE_ID`, as
// before it had subcommands) or changes one.
type sourcesCmd struct {
	List sourcesListCmd `cmd:"" default:"withargs" help:"List a page's feeds and news sitemaps (the default: watchctl sources PAGE_ID)."`
	Set  sourcesSetCmd  `cmd:"" help:"Change how often one feed or news sitemap is checked."`
	OPML sourcesOPMLCmd `cmd:"" name:"opml" help:"Print the feeds of every watched page (or of a tag's pages) as OPML, for a feed reader."`
}

type sourcesOPMLCmd struct {
	Tag string `help:"Only the feeds of the pages with this tag."`
}

// Run prints the feeds found on the watched pages as one OPML list.
func (s *sourcesOPMLCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	tag := strings.ToLower(strings.TrimSpace(s.Tag))
	feeds, err := st.Feeds(c.ctx, tag)
	if err != nil {
		return err
	}
	title := "Feeds of the watched pages"
	if tag != "" {
		title = "Feeds of the pages tagged " + tag
	}
	if err := pagefile.WriteFeeds(c.stdout, title, feeds); err != nil {
		return err
	}
	if len(feeds) == 0 {
		fmt.Fprintln(c.stderr, "no feed found on the watched pages yet: a page watched with --sources homepage,feeds lists its feeds once discovered (`watchctl sources PAGE_ID`)")
	}
	return nil
}

type sourcesListCmd struct {
	ID   string `arg:"" name:"page-id" help:"The page's id (see watchctl list)."`
	JSON bool   `name:"json" help:"One JSON object per line."`
}

// sourceLine is a source as --json shows it: with its status in one word
// and how often it is checked.
type sourceLine struct {
	watch.Source
	Status string `json:"status"`
	watch.SourceSchedule
}

func newSourceLine(src watch.Source) sourceLine {
	return sourceLine{Source: src, Status: src.Status(), SourceSchedule: src.Schedule()}
}

// interval shows how often the source is checked, marked when that is
// its page's interval.
func interval(src watch.Source) string {
	if src.CheckInterval == 0 {
		return watch.FormatDuration(src.EffectiveInterval()) + " (page)"
	}
	return watch.FormatDuration(src.EffectiveInterval())
}

// Run lists the page's feeds and news sitemaps with the state of their
// checks.
func (s *sourcesListCmd) Run(c *cli) error {
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
			if err := enc.Encode(newSourceLine(src)); err != nil {
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
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tEVERY\tLAST CHECK\tHTTP\tFAILURES\tTITLE\tURL\tERROR")
	for _, src := range sources {
		last, status := "never", "-"
		if src.LastCheckedAt != nil {
			last = src.LastCheckedAt.Local().Format("2006-01-02 15:04:05")
			status = strconv.Itoa(src.LastStatus)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", src.ID, src.Kind, src.Status(), interval(src), last, status, src.ConsecutiveFailures,
			oneLine(src.Title), src.URL, oneLine(src.LastError))
	}
	return tw.Flush()
}

type sourcesSetCmd struct {
	ID       string `arg:"" name:"source-id" help:"The source's id (the ID column of watchctl sources PAGE_ID)."`
	Interval string `placeholder:"D|page" help:"Time between the source's checks (10s, 2m, 1h, 1d), at least ${min_interval}; page follows its page's interval again."`
	Paused   *bool  `name:"paused" placeholder:"true|false" help:"Pause the source (true: kept, not checked) or resume it (false: its next check is a silent baseline)."`
	JSON     bool   `name:"json" help:"Print the source as one JSON object."`
}

// Run changes how often one source is checked, or pauses or resumes it.
func (s *sourcesSetCmd) Run(c *cli) error {
	id, err := parseID(s.ID)
	if err != nil {
		return err
	}
	if s.Interval == "" && s.Paused == nil {
		return usagef("nothing to change: give --interval, --paused or both")
	}
	edit := watch.SourceEdit{Paused: s.Paused}
	if s.Interval != "" {
		d, err := watch.ParseSourceInterval(s.Interval)
		if err != nil {
			return usagef("--interval: %v", err)
		}
		edit.Interval = &d
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	src, err := st.EditSource(c.ctx, id, edit)
	if errors.Is(err, watch.ErrSourceNotFound) {
		return usagef("no source has id %d: `watchctl sources PAGE_ID` lists a page's sources with their ids", id)
	}
	if err != nil {
		return err
	}
	if s.JSON {
		return json.NewEncoder(c.stdout).Encode(newSourceLine(src))
	}
	every := "every " + watch.FormatDuration(src.EffectiveInterval())
	if src.CheckInterval == 0 {
		every += ", its page's interval"
	}
	if src.Paused {
		fmt.Fprintf(c.stdout, "source %d of page %d (%s %s): paused, not checked until `watchctl sources set %d --paused=false`\n",
			src.ID, src.PageID, src.Kind, src.URL, src.ID)
		return nil
	}
	fmt.Fprintf(c.stdout, "source %d of page %d (%s %s): checked %s; next check %s\n", src.ID, src.PageID, src.Kind, src.URL, every,
		src.NextCheckAt.Local().Format("2006-01-02 15:04:05"))
	if s.Paused != nil {
		fmt.Fprintf(c.stdout, "source %d: not paused; if it was, its next check is a silent baseline (what it lists now is recorded, not reported as new)\n", src.ID)
	}
	return nil
}
