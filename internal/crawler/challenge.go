package crawler

import (
	"bytes"
	"strings"
)

// maxChallengeLinks is the most links a page may have and still be taken
// for a challenge page. Real pages carry the same markers (Cloudflare puts
// its challenge-platform script on pages it lets through, and a comment
// form embeds reCAPTCHA), but they carry dozens of links too; an
// interstitial has a handful at most.
const maxChallengeLinks = 5

// challengeScan bounds the bytes of a page searched for markers: an
// interstitial is small, and a page with few links but megabytes of text
// is no interstitial worth the search.
const challengeScan = 256 << 10

// challengeSigns are the markers of the bot challenges that answer in
// place of a page, by vendor, each with the title it must have ("" for
// any) and a marker of its body (lower case), or none when the title
// says it alone.
var challengeSigns = []struct {
	vendor, title, marker string
}{
	{"Cloudflare", "just a moment...", "challenge-platform"},
	{"Cloudflare", "just a moment...", "cf-chl"},
	{"Cloudflare", "just a moment...", "cf_chl"},
	{"Cloudflare", "attention required! | cloudflare", ""},
	{"DataDome", "", "captcha-delivery.com"},
	{"PerimeterX", "", "px-captcha"},
	{"hCaptcha", "", "hcaptcha.com/1/api.js"},
	{"reCAPTCHA", "", "google.com/recaptcha/api.js"},
	{"reCAPTCHA", "", "recaptcha.net/recaptcha/api.js"},
}

// challengeOf returns the vendor of the bot challenge that page (its body,
// title and count of links found) is, or "" when it is not one. It is
// conservative: a page with more than maxChallengeLinks links is never a
// challenge, whatever scripts it loads.
func challengeOf(page []byte, title string, links int) string {
	if links > maxChallengeLinks {
		return ""
	}
	title = strings.ToLower(strings.TrimSpace(title))
	var body []byte // lowered on first need
	for _, s := range challengeSigns {
		if s.title != "" && s.title != title {
			continue
		}
		if s.marker == "" {
			return s.vendor
		}
		if body == nil {
			body = bytes.ToLower(page[:min(len(page), challengeScan)])
		}
		if bytes.Contains(body, []byte(s.marker)) {
			return s.vendor
		}
	}
	return ""
}
