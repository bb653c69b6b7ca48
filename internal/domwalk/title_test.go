package domwalk

import (
	"strings"
	"testing"
)

func TestTitle(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
		max             int
	}{
		{"plain", `<html><head><title>Die Welt  –
			Nachrichten</title></head><body><a href="/a">A</a>`, "Die Welt – Nachrichten", 300},
		{"entities", `<title>News &amp; Views &lt;3</title>`, "News & Views <3", 300},
		{"none", `<html><head></head><body><title>late</title>`, "", 300},
		{"the first of two", `<head><title>Portal</title><svg><title>icon</title></svg>`, "Portal", 300},
		{"empty", `<title></title>`, "", 300},
		{"after an anchor", `<a href="/x">x</a><title>no</title>`, "", 300},
		{"cut on a rune", `<title>` + strings.Repeat("ü", 10) + `</title>`, strings.Repeat("ü", 4), 4},
	} {
		if got := Title([]byte(tc.src), tc.max); got != tc.want {
			t.Errorf("%s: Title = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTitleSkipsScripts(t *testing.T) {
	// A script's text is not markup: a title spelled inside it is skipped.
	for _, p := range []string{
		`<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><title>heise online - IT-News</title>`,
		`<html><head><script>var t = "<title>not this</title>";</script><title>Xinhua</title></head>`,
	} {
		if got := Title([]byte(p), 300); got == "" || strings.Contains(got, "not this") {
			t.Errorf("Title(%q) = %q", p, got)
		}
	}
}
