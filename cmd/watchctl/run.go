package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command could not be carried out
	exitUsage = 2 // the command line or its input is wrong; nothing was written
)

const usage = `usage: watchctl <command> [arguments]

commands:
  migrate                          apply pending database migrations
  add URL [--interval 5m] [--same-site] [--ignore REGEXP]...
                                   watch a homepage (interval at least 10s)
  list [--json]                    list watched pages and their status
  set ID [--interval D] [--enabled true|false] [--same-site true|false] [--ignore REGEXP]... [--clear-ignore]
                                   change a page's settings
  remove ID                        stop watching a page and delete its links and updates
  updates [--page ID] [--since 1h|2006-01-02T15:04:05Z] [--limit 100] [--json]
                                   print new links, newest first
  dead list|requeue|purge [--queue job|task|all] [--limit N] [--json]
                                   show, retry or drop dead-lettered messages
`

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type cli struct {
	ctx    context.Context
	cfg    config.Config
	stdout io.Writer
	stderr io.Writer
	// resolver checks where registered hosts resolve; nil is the system's.
	resolver fetch.Resolver
}

func run(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "watchctl:", err)
		return exitUsage
	}
	c := &cli{ctx: ctx, cfg: cfg, stdout: stdout, stderr: stderr}
	commands := map[string]func([]string) error{
		"migrate": c.migrate,
		"add":     c.add,
		"list":    c.list,
		"set":     c.set,
		"remove":  c.remove,
		"updates": c.updates,
		"dead":    c.dead,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "watchctl: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
	if err := cmd(args[1:]); err != nil {
		fmt.Fprintf(stderr, "watchctl %s: %v\n", args[0], err)
		var ue usageError
		if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// parse parses flags wherever they stand among the positional arguments, as
// people type them ("add URL --interval 30s").
//
// A boolean flag may also be followed by its value as the next word
// ("--enabled false"), which Go's flag package alone would read as the flag
// set to true and a stray argument.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	args = joinBoolValues(fs, args)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		isBool := false
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok {
				isBool = bf.IsBoolFlag()
			}
		}
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && isBool && i+1 < len(args) {
			if _, err := strconv.ParseBool(args[i+1]); err == nil {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

func (c *cli) open() (*store.Store, error) {
	st, err := store.Open(c.ctx, c.cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := st.Ping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("%w (is PostgreSQL running? `make up` starts it)", err)
	}
	return st, nil
}

func (c *cli) migrate(args []string) error {
	if _, err := parse(flag.NewFlagSet("migrate", flag.ContinueOnError), args); err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(c.ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	version, err := st.SchemaVersion(c.ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(c.stdout, "database is up to date (version %d)\n", version)
		return nil
	}
	fmt.Fprintf(c.stdout, "applied %d migrations; database is at version %d\n", len(applied), version)
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// boolOpt is a flag that may be given as --flag or --flag=false and records
// whether it was given at all.
type boolOpt struct {
	set, value bool
}

func (b *boolOpt) String() string   { return strconv.FormatBool(b.value) }
func (b *boolOpt) IsBoolFlag() bool { return true }
func (b *boolOpt) Set(v string) error {
	parsed, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", v)
	}
	b.set, b.value = true, parsed
	return nil
}

func (c *cli) add(args []string) error {
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	interval := fs.Duration("interval", watch.DefaultInterval, "time between checks")
	var sameSite boolOpt
	fs.Var(&sameSite, "same-site", "keep only links to the page's host and its subdomains")
	var ignore stringList
	fs.Var(&ignore, "ignore", "regular expression of link URLs to ignore (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one URL, got %d arguments (usage: watchctl add URL [--interval 5m])", len(pos))
	}
	u, err := c.checkURL(pos[0])
	if err != nil {
		return err
	}
	if err := checkInterval(*interval); err != nil {
		return err
	}
	if err := checkPatterns(ignore); err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	page, err := st.AddPage(c.ctx, store.NewPage{
		URL: u, Interval: *interval,
		Options: watch.LinkOptions{SameSiteOnly: sameSite.value, Ignore: ignore},
	})
	if errors.Is(err, watch.ErrDuplicatePage) {
		return usagef("%s is already watched (see `watchctl list`)", u)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "watching page %d: %s every %s\n", page.ID, page.BaseURL, page.Interval)
	return nil
}

// checkURL refuses what portalwatch must never fetch and returns the URL in
// its normalised form, so one page cannot be registered twice under two
// spellings.
func (c *cli) checkURL(raw string) (string, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := fetch.CheckURL(ctx, raw, c.cfg.AllowPrivate, c.resolver); err != nil {
		return "", usageError{err.Error()}
	}
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return "", usagef("%s: %v", raw, err)
	}
	return u, nil
}

func checkInterval(d time.Duration) error {
	if d < watch.MinInterval {
		return usagef("interval %s is too short: the shortest is %s", d, watch.MinInterval)
	}
	return nil
}

func checkPatterns(patterns []string) error {
	for _, p := range patterns {
		if err := validPattern(p); err != nil {
			return usagef("--ignore %q: %v", p, err)
		}
	}
	return nil
}

func (c *cli) list(args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	pages, err := st.Pages(c.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		for _, p := range pages {
			if err := enc.Encode(pageJSON(p)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tINTERVAL\tENABLED\tLAST CHECK\tSTATUS\tURL\tERROR")
	for _, p := range pages {
		last, status := "never", "-"
		if !p.LastCheckedAt.IsZero() {
			last = p.LastCheckedAt.Local().Format("2006-01-02 15:04:05")
			status = strconv.Itoa(p.LastStatus)
		}
		fmt.Fprintf(tw, "%d\t%s\t%t\t%s\t%s\t%s\t%s\n", p.ID, p.Interval, p.Enabled, last, status, p.BaseURL, oneLine(p.LastError))
	}
	return tw.Flush()
}

func pageJSON(p watch.Page) map[string]any {
	m := map[string]any{
		"id": p.ID, "base_url": p.BaseURL, "interval": p.Interval.String(), "enabled": p.Enabled,
		"next_check_at": p.NextCheckAt, "last_status": p.LastStatus, "last_error": p.LastError,
		"consecutive_failures": p.ConsecutiveFailures, "same_site_only": p.Options.SameSiteOnly,
		"ignore": p.Options.Ignore, "created_at": p.CreatedAt,
	}
	if !p.LastCheckedAt.IsZero() {
		m["last_checked_at"] = p.LastCheckedAt
	}
	if !p.BaselineAt.IsZero() {
		m["baseline_at"] = p.BaselineAt
	}
	return m
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%q is not a page id: want a positive whole number (see `watchctl list`)", s)
	}
	return id, nil
}

func (c *cli) set(args []string) error {
	fs := flag.NewFlagSet("set", flag.ContinueOnError)
	var interval durationOpt
	fs.Var(&interval, "interval", "time between checks")
	var enabled, sameSite boolOpt
	fs.Var(&enabled, "enabled", "check the page (true) or pause it (false)")
	fs.Var(&sameSite, "same-site", "keep only links to the page's host and its subdomains")
	var ignore stringList
	fs.Var(&ignore, "ignore", "regular expression of link URLs to ignore (repeatable; replaces the list)")
	clearIgnore := fs.Bool("clear-ignore", false, "remove every ignore pattern")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one page id, got %d arguments", len(pos))
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	var change store.PageChange
	if interval.set {
		if err := checkInterval(interval.value); err != nil {
			return err
		}
		change.Interval = &interval.value
	}
	if enabled.set {
		change.Enabled = &enabled.value
	}
	if sameSite.set {
		change.SameSiteOnly = &sameSite.value
	}
	if len(ignore) > 0 || *clearIgnore {
		if err := checkPatterns(ignore); err != nil {
			return err
		}
		list := []string(ignore)
		change.Ignore = &list
	}
	if change == (store.PageChange{}) {
		return usagef("nothing to change: give --interval, --enabled, --same-site, --ignore or --clear-ignore")
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	page, err := st.SetPage(c.ctx, id, change)
	if errors.Is(err, watch.ErrPageNotFound) {
		return usagef("no page has id %d (see `watchctl list`)", id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "page %d: %s every %s, enabled %t, same-site %t, ignore %q\n",
		page.ID, page.BaseURL, page.Interval, page.Enabled, page.Options.SameSiteOnly, page.Options.Ignore)
	return nil
}

type durationOpt struct {
	set   bool
	value time.Duration
}

func (d *durationOpt) String() string { return d.value.String() }
func (d *durationOpt) Set(v string) error {
	parsed, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m, got %q", v)
	}
	d.set, d.value = true, parsed
	return nil
}

func (c *cli) remove(args []string) error {
	pos, err := parse(flag.NewFlagSet("remove", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one page id, got %d arguments", len(pos))
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RemovePage(c.ctx, id); errors.Is(err, watch.ErrPageNotFound) {
		return usagef("no page has id %d (see `watchctl list`)", id)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "removed page %d\n", id)
	return nil
}

func (c *cli) updates(args []string) error {
	fs := flag.NewFlagSet("updates", flag.ContinueOnError)
	page := fs.String("page", "", "only this page's updates")
	since := fs.String("since", "", "only updates newer than this: a duration back from now (90s, 1h, 2d) or an RFC 3339 time")
	limit := fs.Int("limit", 100, "print at most this many")
	asJSON := fs.Bool("json", false, "one JSON object per line: page_id, url, text, discovered_at")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q (did you mean --page %s?)", pos[0], pos[0])
	}
	q := store.UpdatesQuery{Limit: *limit}
	if *limit <= 0 {
		return usagef("--limit %d: want a positive number", *limit)
	}
	if *page != "" {
		if q.PageID, err = parseID(*page); err != nil {
			return err
		}
	}
	if *since != "" {
		if q.Since, err = parseSince(*since, time.Now()); err != nil {
			return err
		}
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	updates, err := st.Updates(c.ctx, q)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		for _, u := range updates {
			if err := enc.Encode(updateJSON{PageID: u.PageID, URL: u.URL, Text: u.Text, DiscoveredAt: u.DiscoveredAt.UTC(), ID: u.ID, Code: u.Code}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DISCOVERED\tPAGE\tTEXT\tURL")
	for _, u := range updates {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", u.DiscoveredAt.Local().Format("2006-01-02 15:04:05"), u.PageID, oneLine(u.Text), u.URL)
	}
	return tw.Flush()
}

type updateJSON struct {
	PageID       int64     `json:"page_id"`
	URL          string    `json:"url"`
	Text         string    `json:"text"`
	DiscoveredAt time.Time `json:"discovered_at"`
	ID           int64     `json:"id"`
	Code         string    `json:"code"`
}

// parseSince reads "90s", "1h", "2d" (back from now) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, usagef("--since %q: want a duration back from now (90s, 1h, 2d) or a time like 2026-11-30T08:00:00Z", s)
	}
	return now.Add(-d), nil
}
