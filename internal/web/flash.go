package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// A flash is the message a redirect asks its page to show. The URL carries
// only a fixed code and a number, and the server writes the text: a link
// someone sends must not make portalwatch's page say what they like
// ("/signin?done=Session expired: sign in at https://evil.example"), and a
// receiver's URL, token included, must not travel in a Location header.
const (
	flashWatching        = "watching"             // n: the page added
	flashRestored        = "restored"             // n: the page back from the trash
	flashPageTrashed     = "page-trashed"         // n: the page moved to the trash
	flashChecking        = "checking"             // n: the page due now
	flashMarkedRead      = "marked-read"          // n: how many were unread
	flashSaved           = "saved"                // n: the page
	flashSavedRebaseline = "saved-rebaseline"     // n: the page
	flashPaused          = "paused"               // n: the page
	flashResumed         = "resumed"              // n: the page
	flashSubRemoved      = "subscription-removed" // n: the subscription
	flashSubResumed      = "subscription-resumed" // n: the subscription
)

// flashTexts are the messages of the codes; %d is the number.
var flashTexts = map[string]string{
	flashWatching:    "Watching page %d: its first check is its baseline",
	flashRestored:    "Page %d is back from the trash with its history; it is checked at the next round",
	flashPageTrashed: "Moved page %d to the trash: it is no longer checked, and can be restored from the trash for 7 days",
	flashChecking:    "Page %d is due now: the scheduler's next round sends it to a crawler",
	flashMarkedRead:  "All caught up: marked read up to update %d",
	flashSaved:       "Saved page %d",
	flashSavedRebaseline: "Saved page %d. The new options change which links the page admits: its next check " +
		"re-baselines silently (the links they now admit are recorded, not reported as new).",
	flashPaused:     "Paused page %d",
	flashResumed:    "Resumed page %d",
	flashSubRemoved: "Removed subscription %d",
	flashSubResumed: "Subscription %d will be tried again now",
}

// flashURL is path with the flash code and its number, for a redirect.
func flashURL(path, code string, n int64) string {
	return path + "?" + url.Values{"done": {code}, "n": {strconv.FormatInt(n, 10)}}.Encode()
}

// withFlash is flashURL for a path that may have a query of its own (a
// filtered list to return to), which it keeps.
func withFlash(path, code string, n int64) string {
	p, query, _ := strings.Cut(path, "?")
	q, _ := url.ParseQuery(query)
	q.Set("done", code)
	q.Set("n", strconv.FormatInt(n, 10))
	return p + "?" + q.Encode()
}

// flashOf returns the message r's URL asks for, or "" for none or for a
// code or number this server never writes.
func flashOf(r *http.Request) string {
	q := r.URL.Query()
	text, ok := flashTexts[q.Get("done")]
	if !ok {
		return ""
	}
	n, err := strconv.ParseInt(q.Get("n"), 10, 64)
	if err != nil || n <= 0 {
		return ""
	}
	return fmt.Sprintf(text, n)
}
