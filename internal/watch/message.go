package watch

import (
	"fmt"
	"strings"
	"time"

	"github.com/goccy/go-json"
)

// Message and Delivery are what a service publishes and consumes; the queue
// adapter carries them over AMQP, so a service names no type of the broker's
// client.

// Message is one message to publish.
type Message struct {
	Body    []byte
	Headers map[string]string
}

// Delivery is one message handed to a Handler.
type Delivery struct {
	Body []byte
	// Redelivered is true when the broker may have delivered the message
	// before (to this or another consumer).
	Redelivered bool
	// DeliveryCount is how many times the message was returned to the queue
	// before this delivery (RabbitMQ's x-delivery-count), 0 at first.
	DeliveryCount int64
	// Holds is how many times the consumer has already held this delivery
	// because its handler returned a *Later, 0 at first. A delivery the
	// broker sends again (after a stop or a lost connection) starts at 0.
	Holds int
	// HeldSince is when this delivery was first held, the zero time when it
	// never was (Holds is 0). With Holds it lets a handler that holds again
	// and again give up in time.
	HeldSince time.Time
	// State is the State of the Later that last held this delivery; nil
	// when it never was held, or was held without one.
	State any
}

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
	// LinksDigest is the digest (shortlink.SetDigest) of the links, with
	// their texts, that the page's last recorded check found. Every link of
	// that set is in the database with that text, so a crawler that finds
	// the same links under the same headlines need not send them.
	LinksDigest string `json:"linksDigest,omitempty"`
	// BodyDigest is the digest of the body the check that recorded
	// LinksDigest read (FetchResult.BodyDigest): the same body again has
	// the same links, and is neither decoded nor parsed.
	BodyDigest string `json:"bodyDigest,omitempty"`
	// Slot is the fetch slot the scheduler booked for the check; nil when
	// it booked none (no host spacing, or a scheduler older than slots),
	// and the crawler books its own.
	Slot *Slot `json:"slot,omitempty"`
	// Followed is the page's following state (removals) when the job was
	// scheduled; the crawler passes it on in a task with links.
	Followed *Followed `json:"followed,omitempty"`
	// Headers are the page's request headers, secrets sealed as stored
	// (the scheduler holds no key): the crawler opens them just before
	// the fetch. A crawler older than headers ignores them.
	Headers []Header `json:"headers,omitempty"`
	// Snapshot is the page's newest archived payload: a crawler that
	// archives a body with its digest writes a revisit record. Nil when
	// the page has none.
	Snapshot *SnapshotOriginal `json:"snapshot,omitempty"`
	// Source, when set, asks for a check of one of the page's feeds or
	// news sitemaps instead of its homepage; ETag and LastModified are
	// then that source's, and ItemsDigest the digest of the items of its
	// last recorded check. A crawler older than sources would check the
	// homepage instead, which the processor records as a homepage check.
	Source      *SourceRef `json:"source,omitempty"`
	ItemsDigest string     `json:"itemsDigest,omitempty"`
	// PageURL is the page's own URL in a source's job, whose BaseURL is
	// the source's: a secret header of the page goes to the source only
	// when both are of one origin.
	PageURL string `json:"pageUrl,omitempty"`
	// Discover asks for a discovery of the page's feeds and news sitemaps
	// (package discover) instead of a check; Sources are the kinds of
	// source the page chose (SourcesFeeds, SourcesSitemaps).
	Discover bool     `json:"discover,omitempty"`
	Sources  []string `json:"sources,omitempty"`
	// Proxy names the proxy of the operator's list (PORTALWATCH_PROXIES)
	// the page is fetched through; empty goes direct. A crawler older than
	// proxies ignores it and fetches direct.
	Proxy string `json:"proxy,omitempty"`
	// Render says the job is for the renderer (Page.Render): the
	// scheduler publishes it to the render queue. WaitFor is the page's
	// Page.WaitFor.
	Render  bool   `json:"render,omitempty"`
	WaitFor string `json:"waitFor,omitempty"`
	// RenderAllow are the page's Page.RenderAllow: hosts beyond its site
	// the renderer lets it load from.
	RenderAllow []string `json:"renderAllow,omitempty"`
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
	// BodyDigest is the digest of the body the check read (see
	// FetchResult.BodyDigest), recorded with a whole link set so that the
	// next check of the same body can skip it; empty when no body was read.
	BodyDigest string `json:"bodyDigest,omitempty"`
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
	// Kept counts the links the check kept after the regions and filters
	// of its page, those cut by caps included (Reading.Kept); nil when the
	// check walked no body (failed, 304, same body) or came from a crawler
	// older than watch health, and then the health stays as it is.
	// An unchanged check carries it too, yet changes nothing: its links
	// are the recorded set, already judged.
	Kept *int `json:"kept,omitempty"`
	// MissedRegions are the page's Within selectors when none matched an
	// element (Reading.MissedRegions).
	MissedRegions []string `json:"missedRegions,omitempty"`
	// Challenge names the vendor of the bot challenge the site answered
	// with instead of the page ("Cloudflare", "DataDome"…); such a check
	// fails, and Error says why.
	Challenge string `json:"challenge,omitempty"`
	// Snapshot locates the WARC records the crawler archived of this
	// check (a task with links only); the processor indexes them with the
	// check when it records something. Nil when nothing was archived.
	Snapshot *SnapshotRef `json:"snapshot,omitempty"`
	// Rendered says the links were read from the DOM headless Chromium
	// built (the renderer), not from the page as fetched.
	Rendered bool `json:"rendered,omitempty"`
	// Scripted says a plain check read almost no links (at most
	// ScriptedMaxLinks) from a page that holds scripts: its links may be
	// built by JavaScript (Page.RenderHint).
	Scripted bool `json:"scripted,omitempty"`
	// Source is the job's Source: the task is a check of that feed or
	// news sitemap, its items in Context (each with its PublishedAt
	// when the source states one), and ItemsDigest their digest.
	Source      *SourceRef `json:"source,omitempty"`
	ItemsDigest string     `json:"itemsDigest,omitempty"`
	// Discover says the task is the result of the job's discovery:
	// Discovered lists the feeds and news sitemaps it found (of the kinds
	// the page chose), and Error says why it failed.
	Discover   bool               `json:"discover,omitempty"`
	Discovered []DiscoveredSource `json:"discovered,omitempty"`
}

// ScriptedMaxLinks is the most links a page with scripts may show a plain
// check for the check to suggest rendering it.
const ScriptedMaxLinks = 5

// RenderHint returns what the check says of rendering the page (the
// page's RenderHint after it), nil when it read no page to judge: failed,
// 304, unchanged, or from a crawler older than hints.
func (t Task) RenderHint() *bool {
	if t.Kept == nil || t.Failed() || t.NotModified() {
		return nil
	}
	hint := t.Scripted && !t.Rendered
	return &hint
}

// Reading returns what the check saw of the page for its health, nil when
// it has nothing new to judge: it failed, needed no link work (304,
// unchanged: its links are the set already judged), or its crawler did not
// count.
func (t Task) Reading() *Reading {
	if t.Kept == nil || t.Failed() || t.NotModified() {
		return nil
	}
	return &Reading{Kept: max(*t.Kept, 0), MissedRegions: t.MissedRegions}
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
