package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// A flash is the message a redirect asks its page to show. The URL carries
// only a fixed code and a number, and the server writes the text: a link
// someone sends must not make portalwatch's page say what they like
// ("/signin?done=Session expired: sign in at https://evil.example"), and a
// receiver's URL, token included, must not travel in a Location header.
const (
	flashWatching        = "watching"             // n: the page added
	flashPageRemoved     = "page-removed"         // n: the page removed
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
	flashPageRemoved: "Removed page %d",
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
