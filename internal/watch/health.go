package watch

import (
	"fmt"
	"strings"
	"time"
)

// Degradation names why a page is degraded: its checks say the watch may be
// blind to the page. The words are those of pages.degraded (migration
// 00020) and of the API.
type Degradation string

// The reasons a page is degraded.
const (
	// NoLinks: a check read the page and kept no link, after the page's
	// regions and filters.
	NoLinks Degradation = "no_links"
	// FewLinks: a check kept fewer than FewLinksShare of the median of the
	// page's recent checks (see FewLinksHistory).
	FewLinks Degradation = "few_links"
	// RegionEmpty: none of the page's Within selectors matched an element.
	RegionEmpty Degradation = "region_empty"
	// Blocked: the site answered 401, 403 or 429.
	Blocked Degradation = "blocked"
	// Challenge: the site answered with a bot challenge (Cloudflare,
	// DataDome, PerimeterX, a CAPTCHA wall) instead of the page.
	Challenge Degradation = "challenge"
)

// The thresholds of FewLinks. A check is judged against the median of the
// kept links of the page's last checks that read it (at most
// KeptHistory of them); with fewer than FewLinksHistory such checks, or a
// median below FewLinksFloor (a page that small swings by a few links and
// says nothing), no check is FewLinks.
const (
	KeptHistory     = 10
	FewLinksHistory = 3
	FewLinksFloor   = 5
	// FewLinksShare is 1/5: a check with under 20% of the usual count.
	FewLinksShare = 5
)

// Words returns d for people: "no links", "region empty"…
func (d Degradation) Words() string { return strings.ReplaceAll(string(d), "_", " ") }

// Health is a page's health as its checks judged it. The zero Health is a
// healthy page.
type Health struct {
	// Reason is why the page is degraded; empty while it is healthy.
	Reason Degradation
	// Detail says Reason for people, e.g. "the page answered 403
	// Forbidden".
	Detail string
	// Since is when the run of degraded checks began; it stays while
	// the reason changes from one check to the next.
	Since time.Time
}

// Degraded reports whether the page is degraded.
func (h Health) Degraded() bool { return h.Reason != "" }

// Reading is what a check that read and walked a page saw of it: the facts
// its health is judged on.
type Reading struct {
	// Kept counts the links the check kept after the page's regions and
	// filters, those the crawler cut for its caps included.
	Kept int
	// MissedRegions are the page's Within selectors when none of them
	// matched an element; nil when one did, or the page has none.
	MissedRegions []string
}

// RegionDetail returns the sentence that says the regions matched nothing.
func RegionDetail(sels []string) string {
	q := make([]string, len(sels))
	for i, s := range sels {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return "no element matched the region " + q[0]
	}
	return "no element matched any of the regions " + strings.Join(q, ", ")
}

// NoLinksDetail is the sentence of NoLinks.
const NoLinksDetail = "the page had no links left after its regions and filters"

// BlockOf returns the degradation of a failed check with HTTP status status
// whose crawler found a challenge page of vendor challenge (empty: none),
// and its sentence; an empty Degradation when the failure is no block
// (a timeout or a 500 says nothing of the watch, and shows as the page's
// error alone).
func BlockOf(status int, challenge string) (Degradation, string) {
	if challenge != "" {
		return Challenge, fmt.Sprintf("the site answered with a %s challenge page instead of the page", challenge)
	}
	// The texts of net/http, which this package does not import.
	if text, ok := map[int]string{401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests"}[status]; ok {
		return Blocked, fmt.Sprintf("the page answered %d %s", status, text)
	}
	return "", ""
}
