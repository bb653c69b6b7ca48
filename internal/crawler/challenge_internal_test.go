package crawler

import (
	"net/url"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

func TestChallengeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, page, title string
		links             int
		want              string
	}{
		{"cloudflare managed challenge", `<html><head><title>Just a moment...</title></head><body>
			<script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1"></script></body></html>`, "Just a moment...", 0, "Cloudflare"},
		{"cloudflare legacy challenge", `<form id="challenge-form" action="/?__cf_chl_f_tk=x">`, "Just a moment...", 1, "Cloudflare"},
		{"cloudflare block page", `<h1>Sorry, you have been blocked</h1>`, "Attention Required! | Cloudflare", 3, "Cloudflare"},
		{"datadome", `<script src="https://ct.captcha-delivery.com/c.js"></script>`, "example.com", 0, "DataDome"},
		{"perimeterx", `<div id="px-captcha"></div>`, "Access to this page has been denied", 2, "PerimeterX"},
		{"hcaptcha wall", `<script src="https://hcaptcha.com/1/api.js"></script>`, "Verify", 0, "hCaptcha"},
		{"recaptcha wall", `<script src="https://www.google.com/recaptcha/api.js"></script>`, "Are you human?", 1, "reCAPTCHA"},
		// Real pages carry the same markers among their links.
		{"cloudflare script on a real page", `<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>`, "Front page", 120, ""},
		{"a comment form with reCAPTCHA", `<script src="https://www.google.com/recaptcha/api.js"></script>`, "News", 80, ""},
		{"just a moment without a marker", `<p>Just a moment, loading the news</p>`, "Just a moment...", 0, ""},
		{"an empty page", ``, "", 0, ""},
	} {
		if got := challengeOf([]byte(tc.page), tc.title, tc.links); got != tc.want {
			t.Errorf("%s: challengeOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// No page of the shared corpus is taken for a challenge, though some load
// Cloudflare's challenge-platform script or reCAPTCHA: their links say
// they are pages.
func TestCorpusPagesAreNoChallenge(t *testing.T) {
	t.Parallel()
	lim := domwalk.Limits{}.WithDefaults()
	u, _ := url.Parse("https://www.corpus.example/")
	marked := 0
	for _, p := range corpus.Pages(t) {
		title := domwalk.Title(p.Body, lim.MaxTextRunes)
		_, stats, _ := domwalk.ParseBytesIn(p.Body, u, lim, nil)
		if v := challengeOf(p.Body, title, stats.Links); v != "" {
			t.Errorf("%s (%d links, title %q) taken for a %s challenge", p.Name, stats.Links, title, v)
		}
		if challengeOf(p.Body, title, 0) != "" {
			marked++
		}
	}
	t.Logf("%d corpus pages carry a challenge marker and are kept apart by their links alone", marked)
}
