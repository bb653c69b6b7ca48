// Package registration decides whether what an operator asks portalwatch to
// watch may be stored. It is the one gate for every way a page gets in or
// is changed - watchctl add and set today, the HTTP API, the web form and
// import later - so that a rule added here holds everywhere at once.
//
// It combines the rules of the packages that own them: the fetcher's URL
// guard for the URL (syntax, and the same non-public address guard the
// crawler's dialer applies, with names resolved; the program wires in
// fetch.Guard), watch.MinInterval for the interval, LinkOptions.Validate for
// the ignore patterns and keyword rules (the caps the crawler checks again
// when it compiles a job's patterns) and domwalk.CompileRegions for the
// region selectors. It depends on urlnorm, domwalk and watch only, so a
// service can import it without importing an adapter.
package registration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// DefaultResolveTimeout bounds the name lookup of a URL's host when ctx
// has no earlier deadline.
const DefaultResolveTimeout = 10 * time.Second

// Policy holds the deployment's registration rules.
type Policy struct {
	// GuardURL refuses a URL the crawler would not fetch, with an error
	// that is or wraps a *watch.FetchError; the programs pass fetch.Guard
	// with the deployment's PORTALWATCH_ALLOW_PRIVATE. Nil refuses every
	// URL: a policy nobody configured admits nothing.
	GuardURL func(ctx context.Context, raw string) error
}

// errNoGuard is what a Policy without GuardURL answers.
var errNoGuard = errors.New("registration: no URL guard configured (Policy.GuardURL is nil)")

// Page is a page as an operator asks for it.
type Page struct {
	// URL is the homepage as typed; CheckPage returns it normalised.
	URL string
	// Interval is the time between checks; at least watch.MinInterval.
	Interval time.Duration
	// Options are the page's link filters.
	Options watch.LinkOptions
	// Name and Tags are what people call and group the page by; CheckPage
	// returns them normalised (watch.NormalizeName, watch.NormalizeTags).
	Name string
	Tags []string
}

// Change is a change to a registered page's settings; a nil field is left
// alone. Enabled and same-site need no check and so are not here.
//
// CheckChange checks each list on its own. The caps that span a page's
// lists (the instruction budget of all its patterns, the count of its
// region selectors) need the page's other options: check the options as
// they will be stored, the change applied, with CheckOptions.
type Change struct {
	Interval    *time.Duration
	Ignore      *[]string
	Within      *[]string
	Exclude     *[]string
	IncludeText *[]string
	ExcludeText *[]string
	IncludeURL  *[]string
	ExcludeURL  *[]string
}

// RefusedError says that the input breaks a rule: the caller should show
// the message (one line, naming the rule and the limit) and store nothing.
// Any other error from this package means the input could not be checked
// (a name lookup timed out, ctx ended), which a retry may cure.
type RefusedError struct {
	// Field names what was refused: "url", "interval", "name", "tags", one
	// of the option lists ("ignore", "within", "exclude", "includeText",
	// "excludeText", "includeUrl", "excludeUrl", as in the options' JSON),
	// or "options" for a cap that spans several lists.
	Field string
	Err   error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *RefusedError) Unwrap() error { return e.Err }

func refused(field string, err error) error { return &RefusedError{Field: field, Err: err} }

// CheckPage checks p and returns it with its URL in normalised form, so
// that one page cannot be registered twice under two spellings. It returns
// a *RefusedError for a URL that GuardURL refuses (also a name that does
// not exist), an interval under watch.MinInterval or options that
// LinkOptions.Validate refuses; another error when the host's name could
// not be resolved (timeout, DNS failure) or ctx ended.
func (pol Policy) CheckPage(ctx context.Context, p Page) (Page, error) {
	u, err := pol.CheckURL(ctx, p.URL)
	if err != nil {
		return Page{}, err
	}
	if err := checkInterval(p.Interval); err != nil {
		return Page{}, err
	}
	if err := CheckOptions(p.Options); err != nil {
		return Page{}, err
	}
	if p.Name, err = checkName(p.Name); err != nil {
		return Page{}, err
	}
	if p.Tags, err = checkTags(p.Tags); err != nil {
		return Page{}, err
	}
	p.URL = u
	return p, nil
}

// CheckURL checks raw as CheckPage does and returns it normalised.
func (pol Policy) CheckURL(ctx context.Context, raw string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultResolveTimeout)
	defer cancel()
	if pol.GuardURL == nil {
		return "", errNoGuard
	}
	if err := pol.GuardURL(ctx, raw); err != nil {
		var dnsErr *net.DNSError
		switch watch.FetchKindOf(err) {
		case watch.FetchTimeout, watch.FetchCanceled:
			return "", err
		case watch.FetchDNS:
			if errors.As(err, &dnsErr) && !dnsErr.IsNotFound {
				return "", err // the resolver failed; the name may be fine
			}
		}
		return "", refused("url", err)
	}
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return "", refused("url", fmt.Errorf("%s: %w", raw, err))
	}
	return u, nil
}

// CheckChange checks the settings c changes, as CheckPage checks a new
// page's; every error is a *RefusedError.
func CheckChange(c Change) error {
	if c.Interval != nil {
		if err := checkInterval(*c.Interval); err != nil {
			return err
		}
	}
	for _, l := range optionLists(c) {
		if l.list != nil {
			if err := l.check(*l.list); err != nil {
				return refused(l.field, err)
			}
		}
	}
	return nil
}

// CheckOptions checks a page's link options as they will be stored: each
// list on its own (the refusal names it), then the caps spanning the lists.
// Every error is a *RefusedError.
func CheckOptions(o watch.LinkOptions) error {
	for _, l := range optionLists(Change{Ignore: &o.Ignore, Within: &o.Within, Exclude: &o.Exclude,
		IncludeText: &o.IncludeText, ExcludeText: &o.ExcludeText, IncludeURL: &o.IncludeURL, ExcludeURL: &o.ExcludeURL}) {
		if err := l.check(*l.list); err != nil {
			return refused(l.field, err)
		}
	}
	if err := o.Validate(); err != nil {
		return refused("options", err)
	}
	if _, err := domwalk.CompileRegions(o.Within, o.Exclude); err != nil {
		return refused("options", err)
	}
	return nil
}

// optionList is one list of a page's options, as a Change holds it, with
// the check of that list alone.
type optionList struct {
	field string
	list  *[]string
	check func([]string) error
}

func optionLists(c Change) []optionList {
	patterns := func(set func(*watch.LinkOptions, []string)) func([]string) error {
		return func(l []string) error {
			var o watch.LinkOptions
			set(&o, l)
			return o.Validate()
		}
	}
	return []optionList{
		{"ignore", c.Ignore, patterns(func(o *watch.LinkOptions, l []string) { o.Ignore = l })},
		{"within", c.Within, func(l []string) error { _, err := domwalk.CompileRegions(l, nil); return err }},
		{"exclude", c.Exclude, func(l []string) error { _, err := domwalk.CompileRegions(nil, l); return err }},
		{"includeText", c.IncludeText, patterns(func(o *watch.LinkOptions, l []string) { o.IncludeText = l })},
		{"excludeText", c.ExcludeText, patterns(func(o *watch.LinkOptions, l []string) { o.ExcludeText = l })},
		{"includeUrl", c.IncludeURL, patterns(func(o *watch.LinkOptions, l []string) { o.IncludeURL = l })},
		{"excludeUrl", c.ExcludeURL, patterns(func(o *watch.LinkOptions, l []string) { o.ExcludeURL = l })},
	}
}

func checkInterval(d time.Duration) error {
	if d < watch.MinInterval {
		return refused("interval", fmt.Errorf("interval %s is too short: the shortest is %s", d, watch.MinInterval))
	}
	return nil
}

// CheckEdit checks the settings e changes, as CheckPage checks a new
// page's, and returns e with its name and tags normalised; every error is
// a *RefusedError.
func CheckEdit(e watch.PageEdit) (watch.PageEdit, error) {
	if err := CheckChange(Change{Interval: e.Interval, Ignore: e.Ignore, Within: e.Within, Exclude: e.Exclude,
		IncludeText: e.IncludeText, ExcludeText: e.ExcludeText, IncludeURL: e.IncludeURL, ExcludeURL: e.ExcludeURL}); err != nil {
		return watch.PageEdit{}, err
	}
	if e.Name != nil {
		name, err := checkName(*e.Name)
		if err != nil {
			return watch.PageEdit{}, err
		}
		e.Name = &name
	}
	if e.Tags != nil {
		tags, err := checkTags(*e.Tags)
		if err != nil {
			return watch.PageEdit{}, err
		}
		e.Tags = &tags
	}
	return e, nil
}

// CheckEditOf checks e as CheckEdit does, then the link options of the
// page as they will be stored, current with e applied, with CheckOptions:
// the caps that span a page's lists. Every error is a *RefusedError.
func CheckEditOf(current watch.LinkOptions, e watch.PageEdit) (watch.PageEdit, error) {
	e, err := CheckEdit(e)
	if err != nil {
		return watch.PageEdit{}, err
	}
	if err := CheckOptions(e.Apply(current)); err != nil {
		return watch.PageEdit{}, err
	}
	return e, nil
}

func checkName(name string) (string, error) {
	name, err := watch.NormalizeName(name)
	if err != nil {
		return "", refused("name", err)
	}
	return name, nil
}

func checkTags(tags []string) ([]string, error) {
	tags, err := watch.NormalizeTags(tags)
	if err != nil {
		return nil, refused("tags", err)
	}
	return tags, nil
}
