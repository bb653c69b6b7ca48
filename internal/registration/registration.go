// Package registration holds the checks of what people ask portalwatch to
// watch that need more than the domain: whether the crawler may fetch a URL
// (its form, and the non-public address guard with the name resolved; the
// program wires in fetch.Guard) and whether region selectors parse. It is
// the one gate for every way a page gets in or is changed (watchctl, the
// API, the web form, imports), so a rule added here holds everywhere at
// once. Every other rule is the domain's own, checked by
// watch.PageSpec.Normalize and watch.PageEdit.Normalize, which the checks
// here call first.
package registration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
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
	// Proxies are the names of the proxies of the deployment, the
	// crawlers' PORTALWATCH_PROXIES, in their order: a page may name only
	// one of them. Nil admits none, so a page cannot be given a proxy
	// that the programs registering it were not told of.
	Proxies []string
}

// errNoGuard is what a Policy without GuardURL answers.
var errNoGuard = errors.New("registration: no URL guard configured (Policy.GuardURL is nil)")

// CheckPage checks s as every entry point must before the store creates
// it: s.Normalize, then the URL with CheckURL and the region selectors'
// grammar. It returns s as it is stored, its URL normalised so that one
// page cannot be registered twice under two spellings. A broken rule is a
// *watch.RefusedError (a name that does not exist included); any other
// error means the host's name could not be resolved (timeout, DNS failure)
// or ctx ended.
func (pol Policy) CheckPage(ctx context.Context, s watch.PageSpec) (watch.PageSpec, error) {
	// Every rule is checked, so that all that is wrong is told at once.
	normal, err := s.Normalize()
	grammar := checkRegionGrammar(s.Options.Within, s.Options.Exclude)
	url, urlErr := pol.CheckURL(ctx, s.URL)
	if err := watch.JoinRefused(urlErr, err, grammar, pol.CheckProxy(s.Proxy)); err != nil {
		return watch.PageSpec{}, err
	}
	normal.URL = url
	return normal, nil
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
		return "", watch.Refused("url", err)
	}
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return "", watch.Refused("url", fmt.Errorf("%s: %w", raw, err))
	}
	return u, nil
}

// CheckProxy refuses a proxy name that is not one of pol.Proxies, with a
// *watch.RefusedError that lists the names there are; "" (direct) passes.
func (pol Policy) CheckProxy(name string) error {
	if name == "" || slices.Contains(pol.Proxies, name) {
		return nil
	}
	if err := watch.CheckProxyName(name); err != nil {
		return watch.Refused("proxy", err)
	}
	if len(pol.Proxies) == 0 {
		return watch.Refused("proxy", fmt.Errorf("proxy %q is not configured: no proxies are (PORTALWATCH_PROXIES is empty here); "+
			"give this program the crawlers' PORTALWATCH_PROXIES, or leave the proxy empty to fetch the page direct", name))
	}
	return watch.Refused("proxy", fmt.Errorf("proxy %q is not configured: PORTALWATCH_PROXIES names %s", name, strings.Join(pol.Proxies, ", ")))
}

// CheckEdit checks e against the link options of the page it changes, as
// they are stored now: e.Normalize, then the options as they will be stored
// (e applied to current) with the caps that span the lists, then the
// grammar of the region selectors e sets and the proxy it names
// (CheckProxy). It returns e with its name and tags normalised; every
// error is a *watch.RefusedError.
func (pol Policy) CheckEdit(e watch.PageEdit, current watch.LinkOptions) (watch.PageEdit, error) {
	var within, exclude []string
	if e.Within != nil {
		within = *e.Within
	}
	if e.Exclude != nil {
		exclude = *e.Exclude
	}
	grammar := checkRegionGrammar(within, exclude)
	var proxy error
	if e.Proxy != nil {
		proxy = pol.CheckProxy(*e.Proxy)
	}
	e, err := e.Normalize()
	if err == nil {
		err = e.Apply(current).Validate()
	}
	if err := watch.JoinRefused(err, grammar, proxy); err != nil {
		return watch.PageEdit{}, err
	}
	return e, nil
}

// checkRegionGrammar parses each list of region selectors on its own, so
// that a refusal names its list; their caps were checked by the domain.
func checkRegionGrammar(within, exclude []string) error {
	_, errWithin := domwalk.CompileRegions(within, nil)
	_, errExclude := domwalk.CompileRegions(nil, exclude)
	return watch.JoinRefused(watch.Refused("within", errWithin), watch.Refused("exclude", errExclude))
}
