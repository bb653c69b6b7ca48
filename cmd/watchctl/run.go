package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/senders"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command could not be carried out
	exitUsage = 2 // the command line or its input is wrong; nothing was written
)

// usageError is a mistake on the command line or in its input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// commandLine is watchctl's grammar as kong reads it: one field per command,
// each with a Run method that kong calls with the *cli.
type commandLine struct {
	Migrate   migrateCmd   `cmd:"" help:"Apply pending database migrations."`
	Add       addCmd       `cmd:"" help:"Watch a homepage."`
	List      listCmd      `cmd:"" help:"List watched pages and their status."`
	Set       setCmd       `cmd:"" help:"Change a page's settings."`
	Remove    removeCmd    `cmd:"" help:"Stop watching a page: it goes to the trash for 7 days, restorable, then is deleted with its links and updates."`
	Restore   restoreCmd   `cmd:"" help:"Bring a page back from the trash, with its history."`
	Trash     trashCmd     `cmd:"" help:"List the pages in the trash and when each is deleted for good."`
	Check     checkCmd     `cmd:"" help:"Check a page now, at the scheduler's next round."`
	Updates   updatesCmd   `cmd:"" help:"Print new links, newest first."`
	Links     linksCmd     `cmd:"" help:"Print a page's links on it now (or taken down, --removed), with their time on the page."`
	Revisions revisionsCmd `cmd:"" help:"Print a page's headline changes, newest first: a known link's text before and after."`
	Dead      deadCmd      `cmd:"" help:"Show, retry or drop dead-lettered messages."`
	Token     tokenCmd     `cmd:"" help:"Create, list and revoke the web API's tokens."`
	Secrets   secretsCmd   `cmd:"" help:"Seal the stored secret headers again after PORTALWATCH_SECRETS_KEY changed."`
	Import    importCmd    `cmd:"" help:"Watch every page of a CSV or OPML list: all of them, or none if any row is bad."`
	Export    exportCmd    `cmd:"" help:"Print the watched pages as CSV or OPML."`
	Notify    notifyCmd    `cmd:"" help:"Subscribe webhooks and e-mail to updates; list, test, resume or remove them."`
	Extract   extractCmd   `cmd:"" help:"Print the article of one saved page (headline, dates, authors, lead, body) as JSON."`
	Discover  discoverCmd  `cmd:"" help:"List the feeds a page links and the sitemaps its robots.txt names (news sitemaps, indexes)."`
	Sources   sourcesCmd   `cmd:"" help:"List a page's feeds and news sitemaps (watched with --sources) and how their checks go; set how often one is checked."`
	Article   articleCmd   `cmd:"" help:"Print an article read from a new link, with every update that links it."`
	Archive   archiveCmd   `cmd:"" help:"List a page's archived snapshots (the page as fetched, WARC), export them as one WARC file, or sweep the archive."`
}

// settings are every variable watchctl reads, each in the config of the
// component it sets: the same as the programs' that do what a command does.
type settings struct {
	// AllowPrivate lets pages and webhooks name loopback and private
	// addresses, as the crawler and the notifier would reach them.
	AllowPrivate bool `env:"PORTALWATCH_ALLOW_PRIVATE"`
	Database     store.Config
	Broker       queue.Config
	Queues       queue.Names
	Senders      senders.Config
	// Secrets seals the secret headers a page is given (Cookie,
	// Authorization) before they are stored.
	Secrets secrets.Config
	// Archive is where the pages as fetched are kept, read by the archive
	// commands.
	Archive archive.Config
	// Proxies are the crawlers' list: a page may name only one of them.
	// Unset, a page given a proxy is refused, with a message saying so.
	Proxies fetch.ProxyConfig
}

func defaults() settings {
	return settings{
		Database: store.Config{}.WithDefaults(),
		Broker:   queue.Config{}.WithDefaults(),
		Queues:   queue.Names{}.WithDefaults(),
		Senders:  senders.Config{Webhook: webhook.Config{UserAgent: fetch.DefaultUserAgent}}.WithDefaults(),
		Archive:  archive.Defaults(),
	}
}

// cli is what every command runs with.
type cli struct {
	ctx    context.Context
	cfg    settings
	stdin  io.Reader // what "-" names, for extract
	stdout io.Writer
	// stderr takes the notes of a command whose output is a document
	// (OPML), which a note on stdout would spoil.
	stderr io.Writer
	// policy is what registration allows; every command that stores a
	// page's settings checks them with it.
	policy registration.Policy
}

const description = `portalwatch's operator CLI. It reads the same environment as the services
(DATABASE_URL, AMQP_URL, PORTALWATCH_ALLOW_PRIVATE, ...), falling back to the settings the running
programs were started with. Exit status: 0 done, 1 could not be carried out, 2 wrong command line or
input (nothing was written).`

func newParser(stdout, stderr io.Writer, exit func(int)) (*kong.Kong, error) {
	return kong.New(&commandLine{},
		kong.Name("watchctl"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(exit),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		// A boolean flag takes its value after "=", which its line says,
		// so that --same-site=false is found without reading the code.
		kong.ValueFormatter(func(v *kong.Value) string {
			h := kong.DefaultHelpValueFormatter(v)
			if v.IsBool() && v.Name != "help" {
				h += " (--" + v.Name + "=true|false)"
			}
			return h
		}),
		kong.Vars{
			"default_interval": watch.FormatDuration(watch.DefaultInterval),
			"min_interval":     watch.FormatDuration(watch.MinInterval),
		},
	)
}

func run(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer) int {
	return runWith(ctx, args, getenv, stdout, stderr, nil)
}

// runWith is run with the resolver registration looks host names up with;
// nil is the system's, the one the crawler dials with.
func runWith(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer, resolver fetch.Resolver) int {
	// Kong reports --help through its exit hook and then carries on
	// parsing; the hook only notes it, so that nothing here exits the
	// process and a test can run the program in-process.
	helped := false
	parser, err := newParser(stdout, stderr, func(int) { helped = true })
	if err != nil {
		// The grammar is fixed at compile time; this is a programming error.
		fmt.Fprintln(stderr, "watchctl:", err)
		return exitError
	}
	if len(args) == 0 {
		// As before kong: the overview, and the status of a usage error.
		parser.Parse([]string{"--help"})
		return exitUsage
	}
	if args[0] == "help" {
		// "watchctl help add" reads better than "watchctl add --help".
		args = append(slices.Clone(args[1:]), "--help")
	}
	kctx, err := parser.Parse(goFlagStyle(parser.Model.Node, args))
	if helped {
		return exitOK
	}
	if err != nil {
		cmd := commandPath(kctx, err)
		fmt.Fprintf(stderr, "%s: %v (see `%s --help`)\n", cmd, err, cmd)
		return exitUsage
	}
	cfg := defaults()
	if err := config.Load(getenv, &cfg); err != nil {
		fmt.Fprintln(stderr, "watchctl:", err)
		return exitUsage
	}
	c := &cli{ctx: ctx, cfg: cfg, stdin: os.Stdin, stdout: stdout, stderr: stderr,
		policy: registration.Policy{GuardURL: fetch.Guard(cfg.AllowPrivate, resolver), Proxies: cfg.Proxies.Names()}}
	if err := kctx.Run(c); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", kctx.Selected().FullPath(), err)
		var ue usageError
		var refused *watch.RefusedError
		if errors.As(err, &ue) || errors.As(err, &refused) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// commandPath names the command a parse error is about ("watchctl add"), or
// the program when the command itself is wrong.
func commandPath(kctx *kong.Context, err error) string {
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		kctx = pe.Context
	}
	if kctx != nil {
		if n := kctx.Selected(); n != nil {
			return n.FullPath()
		}
	}
	return "watchctl"
}

// goFlagStyle rewrites the command line so that kong reads it as Go's flag
// package did before watchctl moved to kong, keeping every command line
// that worked then working now:
//   - a boolean flag may take its value as the next word ("--enabled
//     false"), which kong alone would read as the flag set and a stray
//     argument, and any spelling strconv.ParseBool accepts ("=F");
//   - a flag's value is the next word even when it starts with a dash
//     ("--ignore -draft");
//   - a long flag may be spelt with one dash ("-json").
//
// Only long flags the grammar declares are rewritten; everything after
// "--" is left alone.
func goFlagStyle(root *kong.Node, args []string) []string {
	isBool := map[string]bool{}
	var collect func(n *kong.Node)
	collect = func(n *kong.Node) {
		for _, f := range n.Flags {
			isBool[f.Name] = f.IsBool()
		}
		for _, child := range n.Children {
			collect(child)
		}
	}
	collect(root)
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, value, hasValue := strings.Cut(a, "=")
		dashes := len(name) - len(strings.TrimLeft(name, "-"))
		name = name[dashes:]
		boolFlag, known := isBool[name]
		if dashes == 0 || dashes > 2 || !known || len(name) < 2 {
			out = append(out, a)
			continue
		}
		if !hasValue && i+1 < len(args) {
			if _, err := strconv.ParseBool(args[i+1]); !boolFlag || err == nil {
				value, hasValue = args[i+1], true
				i++
			}
		}
		if !hasValue {
			out = append(out, "--"+name)
			continue
		}
		if v, err := strconv.ParseBool(value); boolFlag && err == nil {
			value = strconv.FormatBool(v)
		}
		out = append(out, "--"+name+"="+value)
	}
	return out
}

func (c *cli) open() (*store.Store, error) {
	sealer, err := c.cfg.Secrets.Sealer()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(c.ctx, c.cfg.Database.URL)
	if err != nil {
		return nil, err
	}
	if sealer != nil {
		st = st.WithSealer(sealer)
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := st.Ping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("%w (is PostgreSQL running? `make up` starts it)", err)
	}
	return st, nil
}

type migrateCmd struct{}

func (migrateCmd) Run(c *cli) error {
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
	fmt.Fprintf(c.stdout, "applied %d %s; database is at version %d\n", len(applied), plural(len(applied), "migration", "migrations"), version)
	return nil
}

type addCmd struct {
	URL      string         `arg:"" name:"url" help:"The homepage: an absolute http or https URL."`
	Interval watch.Duration `default:"${default_interval}" placeholder:"D" help:"Time between checks (10s, 5m, 1h, 1d), at least ${min_interval} (default ${default})."`
	SameSite bool           `name:"same-site" help:"Keep only links to the page's host and its subdomains."`
	Ignore   []string       `sep:"none" placeholder:"REGEXP" help:"Drop links whose URL matches this regular expression (RE2; repeatable)."`
	Name     string         `placeholder:"NAME" help:"What to call the page (default: its <title>, else its host)."`
	Tag      []string       `sep:"none" placeholder:"TAG" help:"A tag for feeds and filters: letters, digits, '-', '_' (repeatable)."`
	// A pointer, as on set: --burst-detection=false, or the value as the
	// next word, is what people type.
	BurstDetection *bool    `name:"burst-detection" placeholder:"true|false" help:"Show a check that floods the page with new links (a redesign) as one event (default true)."`
	Articles       *bool    `name:"articles" placeholder:"true|false" help:"Read each new link as an article: headline, date, authors, lead and body (default true)."`
	Header         []string `sep:"none" placeholder:"'NAME: VALUE'" help:"A request header for the page's checks, such as 'Accept-Language: de' or 'Cookie: session=…' (repeatable). Cookie and Authorization are stored sealed and never shown again; they need PORTALWATCH_SECRETS_KEY."`
	Sources        string   `placeholder:"LIST" help:"What the page is watched through, comma-separated: homepage, feeds (its RSS/Atom/JSON feeds), sitemaps (its news sitemaps); default homepage. Feeds and sitemaps are discovered daily and checked every interval."`
	Proxy          string   `placeholder:"NAME" help:"Fetch the page and its articles through this proxy of the crawlers' PORTALWATCH_PROXIES (default: direct)."`
	Render         bool     `name:"render" help:"Check the page in headless Chromium (the renderer program), so that links its scripts insert are seen."`
	WaitFor        string   `name:"wait-for" placeholder:"CSS" help:"With --render: read the page once this CSS selector matches (bounded by the renderer's deadline) instead of when its network is idle."`
	RenderAllow    []string `name:"render-allow" sep:"none" placeholder:"HOST" help:"With --render: a host beyond the page's site it may load scripts and data from, such as cdn.example.com (its subdomains too) or api.example.com:8443 (that port only); repeatable or comma-separated, at most 20."`
	optionFlags
}

// parseHeaders reads --header values.
func parseHeaders(flags []string) ([]watch.Header, error) {
	out := make([]watch.Header, 0, len(flags))
	for _, f := range flags {
		h, err := watch.ParseHeader(f)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// printHeaders says which headers a page sends, secrets as "(set)".
func printHeaders(w io.Writer, p watch.Page) {
	if len(p.Headers) == 0 {
		fmt.Fprintf(w, "page %d: no request headers\n", p.ID)
		return
	}
	fmt.Fprintf(w, "page %d: headers %s\n", p.ID, strings.Join(watch.ShownHeaders(p.Headers), "; "))
}

func (a *addCmd) Run(c *cli) error {
	opts := a.options()
	opts.SameSiteOnly, opts.Ignore = a.SameSite, a.Ignore
	headers, err := parseHeaders(a.Header)
	if err != nil {
		return err
	}
	var sources []string
	if a.Sources != "" {
		if sources, err = watch.ParseSources(a.Sources); err != nil {
			return usagef("--sources: %v", err)
		}
	}
	p, err := c.policy.CheckPage(c.ctx, watch.PageSpec{
		URL: a.URL, Interval: time.Duration(a.Interval), Options: opts, Name: a.Name, Tags: a.Tag,
		BurstDetectionOff: a.BurstDetection != nil && !*a.BurstDetection,
		ArticlesOff:       a.Articles != nil && !*a.Articles,
		Headers:           headers,
		Sources:           sources,
		Proxy:             a.Proxy,
		Render:            a.Render,
		WaitFor:           a.WaitFor,
		RenderAllow:       watch.SplitRenderAllow(a.RenderAllow...),
	})
	if err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	page, err := st.CreatePage(c.ctx, p)
	if errors.Is(err, watch.ErrDuplicatePage) {
		return usagef("%s is already watched (see `watchctl list`)", p.URL)
	}
	if err != nil {
		return err
	}
	if page.Restored {
		fmt.Fprintf(c.stdout, "restored page %d from the trash, with its history: %s every %s\n", page.ID, page.BaseURL, watch.FormatDuration(page.Interval))
	} else {
		fmt.Fprintf(c.stdout, "watching page %d: %s every %s\n", page.ID, page.BaseURL, watch.FormatDuration(page.Interval))
	}
	if len(page.Headers) > 0 {
		printHeaders(c.stdout, page)
	}
	if page.Proxy != "" {
		printProxy(c.stdout, page)
	}
	if page.Render {
		printRender(c.stdout, page)
	}
	if watch.HasBeyondHomepage(page.Sources) {
		printSources(c.stdout, page)
	}
	return nil
}

// printProxy says how a page is fetched.
func printProxy(w io.Writer, p watch.Page) {
	if p.Proxy == "" {
		fmt.Fprintf(w, "page %d: fetched direct (no proxy)\n", p.ID)
		return
	}
	fmt.Fprintf(w, "page %d: fetched through proxy %s\n", p.ID, p.Proxy)
}

// printRender says how a page is checked: rendered, and what for.
func printRender(w io.Writer, p watch.Page) {
	switch {
	case p.Render && p.WaitFor != "":
		fmt.Fprintf(w, "page %d: rendered in headless Chromium, read once %q matches\n", p.ID, p.WaitFor)
	case p.Render:
		fmt.Fprintf(w, "page %d: rendered in headless Chromium, read once its network is idle\n", p.ID)
	default:
		fmt.Fprintf(w, "page %d: fetched, not rendered\n", p.ID)
	}
	if len(p.RenderAllow) > 0 {
		fmt.Fprintf(w, "page %d: rendered with scripts and data also from %s\n", p.ID, strings.Join(p.RenderAllow, ", "))
	}
}

// printSources says what a page is watched through.
func printSources(w io.Writer, p watch.Page) {
	fmt.Fprintf(w, "page %d: sources %s", p.ID, strings.Join(p.Sources, ","))
	if watch.HasBeyondHomepage(p.Sources) && p.SourcesDiscoveredAt.IsZero() {
		fmt.Fprint(w, " (its feeds and sitemaps are discovered within a minute; see `watchctl sources "+strconv.FormatInt(p.ID, 10)+"`)")
	}
	fmt.Fprintln(w)
}

type listCmd struct {
	JSON bool `name:"json" help:"One JSON object per line."`
}

func (l *listCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	pages, err := st.Pages(c.ctx)
	if err != nil {
		return err
	}
	if l.JSON {
		enc := json.NewEncoder(c.stdout)
		for _, p := range pages {
			if err := enc.Encode(pageJSON(p)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tNAME\tTAGS\tINTERVAL\tENABLED\tSOURCES\tLAST CHECK\tSTATUS\tHEALTH\tPROXY\tURL\tERROR")
	for _, p := range pages {
		last, status := "never", "-"
		if !p.LastCheckedAt.IsZero() {
			last = p.LastCheckedAt.Local().Format("2006-01-02 15:04:05")
			status = strconv.Itoa(p.LastStatus)
		}
		// A check that left links out says so where the status is read.
		if p.LastTruncated > 0 {
			status += fmt.Sprintf(" (%d %s over the limits)", p.LastTruncated, plural(p.LastTruncated, "link", "links"))
		}
		if p.LastCut > 0 {
			status += fmt.Sprintf(" (%d new links over the caps)", p.LastCut)
		}
		// A degraded page says why where its error is read; a block is
		// both, and its error says it already.
		health, problem := "ok", p.LastError
		if p.Health.Degraded() {
			health = "degraded: " + p.Health.Reason.Words()
			if problem == "" {
				problem = p.Health.Detail
			}
		}
		if p.SuggestRender() {
			hint := fmt.Sprintf("almost no links but scripts: try `watchctl set %d --render`", p.ID)
			// First, so that the column's cut at 80 characters keeps it.
			problem = strings.TrimSuffix(hint+"; "+problem, "; ")
		}
		proxy := p.Proxy
		if proxy == "" {
			proxy = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, oneLine(p.DisplayName()), strings.Join(p.Tags, ","), watch.FormatDuration(p.Interval), p.Enabled,
			strings.Join(p.Sources, ","), last, status, health, proxy, p.BaseURL, oneLine(problem))
	}
	return tw.Flush()
}

// nonNil shows an empty list as [] in JSON, not null.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func pageJSON(p watch.Page) map[string]any {
	m := map[string]any{
		"id": p.ID, "base_url": p.BaseURL, "interval": p.Interval.String(), "enabled": p.Enabled,
		"next_check_at": p.NextCheckAt, "last_status": p.LastStatus, "last_error": p.LastError,
		"consecutive_failures": p.ConsecutiveFailures, "same_site_only": p.Options.SameSiteOnly,
		"ignore": p.Options.Ignore, "created_at": p.CreatedAt, "name": p.Name, "tags": p.Tags,
		"last_truncated": p.LastTruncated, "last_cut": p.LastCut, "within": p.Options.Within,
		"exclude": p.Options.Exclude, "include_text": p.Options.IncludeText, "exclude_text": p.Options.ExcludeText,
		"include_url": p.Options.IncludeURL, "exclude_url": p.Options.ExcludeURL,
		"burst_detection": p.BurstDetection, "rebaseline_pending": p.RebaselinePending, "articles": p.Articles,
		"headers": watch.ShownHeaderMap(p.Headers), "sources": p.Sources, "proxy": p.Proxy, "render": p.Render, "wait_for": p.WaitFor,
		"render_allow":   nonNil(p.RenderAllow),
		"suggest_render": p.SuggestRender(),
	}
	if !p.SourcesDiscoveredAt.IsZero() {
		m["sources_discovered_at"] = p.SourcesDiscoveredAt
	}
	if p.SourcesDiscoveryError != "" {
		m["sources_discovery_error"] = p.SourcesDiscoveryError
	}
	if !p.LastCheckedAt.IsZero() {
		m["last_checked_at"] = p.LastCheckedAt
	}
	if !p.BaselineAt.IsZero() {
		m["baseline_at"] = p.BaselineAt
	}
	health := map[string]any{"status": "ok"}
	if h := p.Health; h.Degraded() {
		health = map[string]any{"status": "degraded", "reason": h.Reason, "detail": h.Detail, "since": h.Since}
	}
	m["health"] = health
	return m
}

// oneLine folds s onto one line of at most 80 characters for a table,
// cutting between characters, never inside one.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 80 {
		return string([]rune(s)[:77]) + "..."
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

type setCmd struct {
	ID          string          `arg:"" name:"id" help:"The page's id (see watchctl list)."`
	Interval    *watch.Duration `placeholder:"D" help:"Time between checks (10s, 5m, 1h, 1d), at least ${min_interval}."`
	Enabled     *bool           `placeholder:"true|false" help:"Check the page (true) or pause it (false)."`
	SameSite    *bool           `name:"same-site" placeholder:"true|false" help:"Keep only links to the page's host and its subdomains."`
	Ignore      []string        `sep:"none" placeholder:"REGEXP" help:"Drop links whose URL matches this regular expression (RE2; repeatable; replaces the list)."`
	ClearIgnore bool            `name:"clear-ignore" help:"Remove every ignore pattern."`
	Name        *string         `placeholder:"NAME" help:"What to call the page (\"\" goes back to its <title>, else its host)."`
	Tag         []string        `sep:"none" placeholder:"TAG" help:"A tag for feeds and filters (repeatable; replaces the list)."`
	ClearTags   bool            `name:"clear-tags" help:"Remove every tag."`
	optionFlags
	BurstDetection *bool    `name:"burst-detection" placeholder:"true|false" help:"Show a check that floods the page with new links (a redesign) as one event (default true)."`
	Articles       *bool    `name:"articles" placeholder:"true|false" help:"Read each new link as an article (pages watched before articles existed have it off)."`
	Header         []string `sep:"none" placeholder:"'NAME: VALUE'" help:"Set a request header, replacing one of the same name; 'NAME:' with no value removes it (repeatable; the others stay)."`
	ClearHeaders   bool     `name:"clear-headers" help:"Remove every request header (before any --header)."`
	Sources        string   `placeholder:"LIST" help:"What the page is watched through, comma-separated: homepage, feeds, sitemaps (replaces the list). A source chosen anew starts with a silent baseline."`
	Proxy          *string  `placeholder:"NAME" help:"Fetch the page and its articles through this proxy of the crawlers' PORTALWATCH_PROXIES; --proxy \"\" fetches direct again."`
	Render         *bool    `name:"render" placeholder:"true|false" help:"Check the page in headless Chromium (true) or with a plain fetch (false)."`
	WaitFor        *string  `name:"wait-for" placeholder:"CSS" help:"The CSS selector a rendered check waits for (\"\" waits for the network to go idle)."`
	RenderAllow    []string `name:"render-allow" sep:"none" placeholder:"HOST" help:"The hosts beyond the page's site a rendered check may load from, replacing the list (repeatable or comma-separated); --render-allow \"\" allows none."`
}

func (s *setCmd) Run(c *cli) error {
	id, err := parseID(s.ID)
	if err != nil {
		return err
	}
	change := watch.PageEdit{Interval: (*time.Duration)(s.Interval), Enabled: s.Enabled, SameSiteOnly: s.SameSite, Name: s.Name,
		BurstDetection: s.BurstDetection, Articles: s.Articles}
	s.optionFlags.edit(&change)
	if len(s.Ignore) > 0 || s.ClearIgnore {
		list := s.Ignore
		change.Ignore = &list
	}
	if len(s.Tag) > 0 || s.ClearTags {
		list := s.Tag
		change.Tags = &list
	}
	if len(s.Header) > 0 {
		headers, err := parseHeaders(s.Header)
		if err != nil {
			return err
		}
		change.Headers = &headers
	}
	change.ClearHeaders = s.ClearHeaders
	change.Proxy = s.Proxy
	change.Render, change.WaitFor = s.Render, s.WaitFor
	if len(s.RenderAllow) > 0 {
		hosts := watch.SplitRenderAllow(s.RenderAllow...)
		change.RenderAllow = &hosts
	}
	if s.Sources != "" {
		sources, err := watch.ParseSources(s.Sources)
		if err != nil {
			return usagef("--sources: %v", err)
		}
		change.Sources = &sources
	}
	// Each setting on its own, before the database is asked.
	if _, err = change.Normalize(); err != nil {
		return err
	}
	if change.IsZero() {
		return usagef("nothing to change: give --interval, --enabled, --same-site, --ignore, --clear-ignore, --name, --tag, --clear-tags, --burst-detection, --articles, --header, --clear-headers, --proxy, --sources, --render, --wait-for, --render-allow or an option of regions and keyword rules")
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	before, err := st.Page(c.ctx, id)
	if errors.Is(err, watch.ErrPageNotFound) {
		return usagef("no page has id %d (see `watchctl list`)", id)
	}
	if err != nil {
		return err
	}
	// The caps that span the lists need the options as they will be stored.
	if change, err = c.policy.CheckEdit(change, before.Options); err != nil {
		return err
	}
	page, err := st.EditPage(c.ctx, id, change)
	if errors.Is(err, watch.ErrPageNotFound) {
		return usagef("no page has id %d (see `watchctl list`)", id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "page %d: %s every %s, enabled %t, same-site %t, ignore %q, name %q, tags %q\n",
		page.ID, page.BaseURL, watch.FormatDuration(page.Interval), page.Enabled, page.Options.SameSiteOnly, page.Options.Ignore, page.Name, page.Tags)
	printOptions(c.stdout, page)
	if s.Articles != nil {
		fmt.Fprintf(c.stdout, "page %d: articles %t\n", page.ID, page.Articles)
	}
	if change.Headers != nil || change.ClearHeaders {
		printHeaders(c.stdout, page)
	}
	if change.Proxy != nil {
		printProxy(c.stdout, page)
	}
	if change.Render != nil || change.WaitFor != nil || change.RenderAllow != nil {
		printRender(c.stdout, page)
		if page.RebaselinePending && !before.RebaselinePending {
			fmt.Fprintf(c.stdout, "page %d: it is read another way now; its next check re-baselines silently (the links it finds are recorded, not reported as new)\n", page.ID)
		}
		if change.RenderAllow != nil && len(page.RenderAllow) == 0 {
			fmt.Fprintf(c.stdout, "page %d: rendered with scripts and data from its own site only\n", page.ID)
		}
	}
	if change.Sources != nil {
		printSources(c.stdout, page)
	}
	if page.RebaselinePending && !reflect.DeepEqual(before.Options, page.Options) {
		fmt.Fprintf(c.stdout, "page %d: its options changed what it admits; its next check re-baselines silently (the links now admitted are recorded, not reported as new)\n", page.ID)
	}
	return nil
}

type removeCmd struct {
	ID string `arg:"" name:"id" help:"The page's id (see watchctl list)."`
}

// onPage does to the page the id argument names what do does, as remove,
// restore and check do; a page do does not find is a usage error saying
// missing (with the id).
func (c *cli) onPage(arg string, do func(*store.Store, context.Context, int64) (watch.Page, error), missing string) (watch.Page, error) {
	id, err := parseID(arg)
	if err != nil {
		return watch.Page{}, err
	}
	st, err := c.open()
	if err != nil {
		return watch.Page{}, err
	}
	defer st.Close()
	page, err := do(st, c.ctx, id)
	if errors.Is(err, watch.ErrPageNotFound) {
		return page, usagef(missing, id)
	}
	return page, err
}

func (r *removeCmd) Run(c *cli) error {
	page, err := c.onPage(r.ID, (*store.Store).TrashPage, "no watched page has id %d (see `watchctl list`, and `watchctl trash` for removed ones)")
	if err != nil {
		return err
	}
	id := page.ID
	fmt.Fprintf(c.stdout, "moved page %d (%s) to the trash: it is no longer checked, and is deleted with its links and updates on %s; `watchctl restore %d` brings it back until then\n",
		id, page.DisplayName(), page.PurgeAt().Local().Format("2006-01-02 15:04"), id)
	return nil
}

type restoreCmd struct {
	ID string `arg:"" name:"id" help:"The page's id (see watchctl trash)."`
}

func (r *restoreCmd) Run(c *cli) error {
	page, err := c.onPage(r.ID, (*store.Store).RestorePage, "the trash holds no page %d (see `watchctl trash`)")
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "restored page %d (%s) with its history; it is checked at the next round\n", page.ID, page.DisplayName())
	return nil
}

type trashCmd struct{}

func (trashCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	pages, err := st.TrashedPages(c.ctx)
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		fmt.Fprintln(c.stdout, "the trash is empty")
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tNAME\tREMOVED\tDELETED FOR GOOD\tURL")
	for _, p := range pages {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.ID, oneLine(p.DisplayName()), p.DeletedAt.Local().Format("2006-01-02 15:04"),
			p.PurgeAt().Local().Format("2006-01-02 15:04"), p.BaseURL)
	}
	return tw.Flush()
}

type checkCmd struct {
	ID string `arg:"" name:"id" help:"The page's id (see watchctl list)."`
}

func (k *checkCmd) Run(c *cli) error {
	page, err := c.onPage(k.ID, (*store.Store).CheckNow, "no watched page has id %d (see `watchctl list`)")
	switch {
	case errors.Is(err, watch.ErrPagePaused):
		return usagef("page %d is paused: `watchctl set %d --enabled=true` resumes it", page.ID, page.ID)
	case err != nil:
		return err
	}
	fmt.Fprintf(c.stdout, "page %d (%s) is due now: the scheduler checks it within a few seconds (`watchctl list` shows the result)\n",
		page.ID, page.DisplayName())
	return nil
}

type updatesCmd struct {
	Page  string `placeholder:"ID" help:"Only this page's updates."`
	Since string `placeholder:"WHEN" help:"Only updates newer than this: a duration back from now (90s, 1h, 2d) or an RFC 3339 time."`
	Limit int    `default:"100" help:"Print at most this many."`
	JSON  bool   `name:"json" help:"One JSON object per line, the API's update object: id, page_id, page_name, url, text, code, discovered_at, summary, burst, removed_at and article (headline, description, date_published, author, ...; its body with --content full)."`
	// Content full puts each article's body in the JSON, which is left
	// out otherwise: a body is up to 256 KiB.
	Content string `enum:",full" default:"" placeholder:"full" help:"full: with --json, each article with its body."`
	// Expand lists the links of a redesign flood under its one line.
	Expand  bool `help:"List the new links of each redesign (a check flagged burst) under its line."`
	Removed bool `help:"List links removed from their pages instead of new ones."`
}

func (u *updatesCmd) Run(c *cli) error {
	if u.Limit <= 0 {
		return usagef("--limit %d: want a positive number", u.Limit)
	}
	var (
		pageID int64
		since  time.Time
		err    error
	)
	if u.Page != "" {
		if pageID, err = parseID(u.Page); err != nil {
			return err
		}
	}
	if u.Since != "" {
		if since, err = parseSince(u.Since, time.Now()); err != nil {
			return err
		}
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	if u.Removed {
		if u.Limit > watch.MaxUpdatesLimit {
			return usagef("--limit %d: with --removed, at most %d", u.Limit, watch.MaxUpdatesLimit)
		}
		return u.printRemovals(c, st, watch.RemovalFilter{PageID: pageID, Since: since, Limit: u.Limit})
	}
	f := watch.UpdateFilter{PageID: pageID, Since: since, ArticleBody: u.Content == "full"}
	if u.JSON {
		updates, err := queryUpdates(c.ctx, st, f, u.Limit)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		for _, u := range updates {
			if err := enc.Encode(u.Published()); err != nil {
				return err
			}
		}
		return nil
	}
	events, err := queryEvents(c.ctx, st, f, u.Limit)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		fmt.Fprintln(c.stdout, noUpdates(pageID, since))
		return nil
	}
	return printEvents(c.stdout, events, u.Expand)
}

// noUpdates says that a query found nothing, and what it asked for.
func noUpdates(pageID int64, since time.Time) string {
	msg := "no updates"
	if pageID != 0 {
		msg += fmt.Sprintf(" of page %d", pageID)
	}
	if !since.IsZero() {
		msg += " since " + since.Local().Format("2006-01-02 15:04:05")
	}
	return msg
}

// queryUpdates reads up to limit updates f selects, newest first, in
// pages of watch.MaxUpdatesLimit.
func queryUpdates(ctx context.Context, st *store.Store, f watch.UpdateFilter, limit int) ([]watch.Update, error) {
	var all []watch.Update
	for len(all) < limit {
		f.Limit = min(limit-len(all), watch.MaxUpdatesLimit)
		page, err := st.QueryUpdates(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < f.Limit {
			break
		}
		f.After = watch.CursorOf(page[len(page)-1])
	}
	return all, nil
}

// parseSince reads "90s", "1h", "2d" (back from now) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := watch.ParseDuration(s)
	if err != nil {
		return time.Time{}, usagef("--since %q: want a duration back from now (90s, 1h, 2d) or a time like 2026-11-30T08:00:00Z", s)
	}
	return now.Add(-d), nil
}
