// Package watch holds portalwatch's domain: the messages that travel between
// the scheduler, the crawlers and the processor, the pages users watch, the
// links found on them and the updates users read. It depends on the standard
// library and a JSON codec only, so every adapter and service can share it.
//
// Messages are coded with github.com/goccy/go-json, which reads and writes
// the same JSON as encoding/json (the tests compare the two): a task of a
// portal's homepage is 15–40 KB of JSON, and encoding/json's decoding of it
// was a fifth of the processor's CPU. They are written without HTML
// escaping (as encoding/json with SetEscapeHTML(false)): no message is put
// into a web page, and escaping "&", "<" and ">" as six bytes each let a
// page of URLs full of "&" make a task several times its size.
package watch

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goccy/go-json"
)

// Defaults and limits of a page's check interval.
const (
	DefaultInterval = 5 * time.Minute
	MinInterval     = 10 * time.Second
)

// ErrPageNotFound is returned when a page id names no registered page.
var ErrPageNotFound = errors.New("page not found")

// ErrDuplicatePage is returned when a page with the same base URL is already
// registered.
var ErrDuplicatePage = errors.New("page already registered")

// Job asks a crawler to check one page. Field names follow the source paper.
type Job struct {
	BaseURL string `json:"baseUrl"`
	ID      int64  `json:"id"`
	// ETag and LastModified are the validators of the page's last successful
	// fetch, sent back as If-None-Match and If-Modified-Since.
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"lastModified,omitempty"`
	ScheduledAt  time.Time `json:"scheduledAt,omitzero"`
	// Options are the page's link filters; the crawler applies them so that
	// tasks carry only the links the processor must consider.
	Options *LinkOptions `json:"options,omitempty"`
	// LinksDigest is the digest (shortlink.SetDigest) of the link set the
	// page's last recorded check found. Every link of that set is in the
	// database, so a crawler that finds the same set again need not send it.
	LinksDigest string `json:"linksDigest,omitempty"`
	// Followed is the page's following state (removals) when the job was
	// scheduled; the crawler passes it on in a task with links.
	Followed *Followed `json:"followed,omitempty"`
}

// LinkOptions are a page's per-page link filters. Every field is optional
// in the JSON: options stored before a field existed read as its zero,
// which filters nothing.
type LinkOptions struct {
	// SameSiteOnly keeps only links to the page's host and its subdomains.
	SameSiteOnly bool `json:"sameSiteOnly,omitempty"`
	// Ignore holds regular expressions (RE2 syntax); a link whose normalised
	// URL matches any of them is dropped as churn, not content.
	Ignore []string `json:"ignore,omitempty"`

	// Within holds CSS selectors: when any is given, only the anchors
	// inside (or being) an element that one of them matches count, e.g.
	// "#latest-news" or "main .teaser-list". Exclude holds CSS selectors
	// whose elements' anchors never count, e.g. "nav", "footer",
	// ".ad-rail"; Exclude wins over Within. Caps and the selectors refused
	// are those of domwalk.CompileRegions (10 selectors together, 256 bytes
	// each, no :has, :contains or :matches). A page too large or too deep
	// to be parsed into a tree cannot be checked with regions: its checks
	// fail with a message saying so.
	Within  []string `json:"within,omitempty"`
	Exclude []string `json:"exclude,omitempty"`

	// Keyword rules, regular expressions (RE2 syntax) under the caps of
	// ignore patterns (see CompilePatterns). Text rules are matched,
	// ignoring case, against a link's text and its summary; URL rules
	// against its normalised URL, as written.
	//
	// When IncludeText or IncludeURL holds any pattern, a link is kept only
	// when its text or summary matches one of IncludeText or its URL one of
	// IncludeURL. A link whose text or summary matches one of ExcludeText,
	// or whose URL matches one of ExcludeURL, is dropped, whatever the
	// include rules say.
	IncludeText []string `json:"includeText,omitempty"`
	ExcludeText []string `json:"excludeText,omitempty"`
	IncludeURL  []string `json:"includeUrl,omitempty"`
	ExcludeURL  []string `json:"excludeUrl,omitempty"`
}

// Link is one link found on a page: its normalised absolute URL, the text a
// reader sees for it (the headline, when one of its anchors is in or holds a
// heading) and, when its anchors show more than one text, the longest other
// one (the teaser).
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
	// Summary is the longest text of the link's anchors other than Text,
	// empty when there is none. It is optional in the message: a task
	// without it is the one crawlers sent before it existed.
	Summary string `json:"summary,omitempty"`
}

// Task carries the result of one check of a page from a crawler to the
// processor. A failed check carries its Error and no links.
type Task struct {
	BaseURL string `json:"baseUrl"`
	ID      int64  `json:"id"`
	Context []Link `json:"context"`
	// Status is the HTTP status of the last response, 0 when there was none.
	Status       int       `json:"status"`
	FinalURL     string    `json:"finalUrl,omitempty"`
	FetchedAt    time.Time `json:"fetchedAt,omitzero"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"lastModified,omitempty"`
	Error        string    `json:"error,omitempty"`
	// Unchanged says the page's links are exactly the set of the job's
	// LinksDigest, all of them already recorded: Context is empty and the
	// check needs no link work, like a 304.
	Unchanged bool `json:"unchanged,omitempty"`
	// Truncated counts the links the crawler found but left out of Context
	// because the page's link cap or the task's byte budget was reached; the
	// processor shows it on the page's status.
	Truncated int `json:"truncated,omitempty"`
	// DeferredUntil, when set, says the crawler did not check the page now
	// (a politeness wait would have held a worker too long): the processor
	// records nothing but frees the page to be checked again at that time.
	DeferredUntil time.Time `json:"deferredUntil,omitzero"`
	// Title is the page's <title> as fetched, cleaned; empty when it has
	// none or was not read (a failed check, a 304). It names a page whose
	// user gave it no name.
	Title string `json:"title,omitempty"`
	// Followed is the job's Followed, passed on with the links
	// (watch.Removals.Followed).
	Followed *Followed `json:"followed,omitempty"`
}

// Failed reports whether the check failed; a failed check leaves the page's
// links alone and is recorded as the page's error.
func (t Task) Failed() bool { return t.Error != "" }

// NotModified reports whether the check needs no link work: the server
// answered a conditional GET with 304, or the crawler found exactly the links
// already recorded.
func (t Task) NotModified() bool { return !t.Failed() && (t.Status == 304 || t.Unchanged) }

// EncodeJob returns the job message of j, without HTML escaping.
func EncodeJob(j Job) ([]byte, error) { return json.MarshalWithOption(j, json.DisableHTMLEscape()) }

// EncodeTask returns the task message of t, without HTML escaping.
func EncodeTask(t Task) ([]byte, error) { return json.MarshalWithOption(t, json.DisableHTMLEscape()) }

// DecodeJob parses a job message. A body that is not JSON, or lacks a positive
// id or a baseUrl, yields an error wrapping ErrMalformed.
func DecodeJob(body []byte) (Job, error) {
	var j Job
	if err := json.Unmarshal(body, &j); err != nil {
		return Job{}, fmt.Errorf("%w: job is not JSON: %v", ErrMalformed, err)
	}
	if err := checkIdentity(j.ID, j.BaseURL); err != nil {
		return Job{}, fmt.Errorf("job: %w", err)
	}
	return j, nil
}

// DecodeTask parses a task message. A body that is not JSON, or lacks a
// positive id or a baseUrl, yields an error wrapping ErrMalformed.
func DecodeTask(body []byte) (Task, error) {
	var t Task
	if err := json.Unmarshal(body, &t); err != nil {
		return Task{}, fmt.Errorf("%w: task is not JSON: %v", ErrMalformed, err)
	}
	if err := checkIdentity(t.ID, t.BaseURL); err != nil {
		return Task{}, fmt.Errorf("task: %w", err)
	}
	return t, nil
}

func checkIdentity(id int64, baseURL string) error {
	switch {
	case id <= 0:
		return fmt.Errorf("%w: missing or non-positive id", ErrMalformed)
	case strings.TrimSpace(baseURL) == "":
		return fmt.Errorf("%w: missing baseUrl", ErrMalformed)
	}
	return nil
}

// Page is a registered homepage and its check state.
type Page struct {
	ID                  int64
	BaseURL             string
	Interval            time.Duration
	Enabled             bool
	NextCheckAt         time.Time
	LastCheckedAt       time.Time // zero until the first check
	LastStatus          int
	LastError           string
	ConsecutiveFailures int
	BaselineAt          time.Time // zero until the first successful check
	Options             LinkOptions
	CreatedAt           time.Time
	// LastTruncated counts the links the crawler left out of the last
	// successful check (the link cap or the task's byte budget was reached).
	LastTruncated int
	// LastCut counts the new links the last successful check did not record
	// because the page reached its cap of new links per check or per day;
	// they are recorded by a later check if they are still on the page.
	LastCut int
	// Name is what people call the page; empty means DisplayName falls
	// back to Title, then to the host.
	Name string
	// Tags group pages for feeds and filters (see NormalizeTags).
	Tags []string
	// Title is the page's <title> as last seen; empty until it is recorded.
	Title string
	// RebaselinePending says a person changed what the page's checks admit
	// (regions, keyword rules, ignore patterns, same-site): its next
	// successful whole check records the links it finds without updates.
	RebaselinePending bool
	// BurstDetection flags a check whose new links flood the page (a
	// redesign) as one burst; true unless a person turned it off.
	BurstDetection bool
}

// Update is a link that appeared on a watched page for the first time.
type Update struct {
	ID           int64     `json:"id"`
	PageID       int64     `json:"page_id"`
	URL          string    `json:"url"`
	Text         string    `json:"text"`
	Code         string    `json:"code"`
	DiscoveredAt time.Time `json:"discovered_at"`
	// Summary is the link's teaser, the longest other text of its anchors;
	// empty when it has none.
	Summary string `json:"summary"`
	// Burst says the update came with a redesign flood: one check found
	// more new links than the page's burst share, so readers see the check
	// as one event rather than each link alone.
	Burst bool `json:"burst"`
	// PageName is the DisplayName of the update's page, when the query
	// that read the update joined its page.
	PageName string `json:"page_name,omitempty"`
}
