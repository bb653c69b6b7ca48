package watch_test

import (
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestHeadersAreCheckedAndRefusedWithAReason(t *testing.T) {
	for in, want := range map[string]string{
		"accept-language: de":        "",
		"Cookie: a=1; b=2":           "",
		"X-Api-Key: k":               "",
		"Host: intranet":             "Host is not allowed: the crawler sends the page's own host",
		"Connection: close":          "hop-by-hop",
		"Proxy-Authorization: Basic": "hop-by-hop header, for a proxy",
		"Transfer-Encoding: chunked": "hop-by-hop",
		"Accept-Encoding: br":        "Accept-Encoding is not allowed: the crawler chooses",
		"If-None-Match: x":           "conditional GET",
		"Range: bytes=0-1":           "whole pages",
		"Content-Length: 5":          "without a body",
		"X-Forwarded-For: 10.0.0.1":  "another address",
		"Bad Name: x":                "holds ' '",
		"no colon":                   "write it as 'Name: value'",
	} {
		h, err := watch.ParseHeader(in)
		if err == nil {
			_, err = watch.NormalizeHeaders([]watch.Header{h})
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want one saying %q", in, err, want)
		}
	}
	if h, _ := watch.ParseHeader("accept-language: de"); h.Name != "Accept-Language" {
		t.Errorf("name %q, want the canonical spelling", h.Name)
	}
	for _, bad := range [][]watch.Header{
		{{Name: "Referer", Value: "https://a.example/\r\nX-Evil: 1"}},
		{{Name: "Cookie", Value: "a=1"}, {Name: "cookie", Value: "b=2"}},
		{{Name: "Cookie", Value: watch.SecretShown}},
		{{Name: "User-Agent", Value: ""}},
		{{Name: "Cookie", Value: strings.Repeat("x", watch.MaxHeaderBytes)}},
	} {
		if _, err := watch.NormalizeHeaders(bad); err == nil || watch.RefusalsOf(err) == nil {
			t.Errorf("%q accepted (err %v)", bad, err)
		}
	}
	many := make([]watch.Header, watch.MaxHeaders+1)
	for i := range many {
		many[i] = watch.Header{Name: "X-H" + strings.Repeat("a", i), Value: "1"}
	}
	if _, err := watch.NormalizeHeaders(many); err == nil {
		t.Error("21 headers accepted")
	}
}

func TestSecretHeaders(t *testing.T) {
	for name, secret := range map[string]bool{"Cookie": true, "authorization": true, "X-Api-Key": true, "X-Auth-Token": true,
		"Accept-Language": false, "User-Agent": false, "Referer": false} {
		if watch.IsSecretHeader(name) != secret {
			t.Errorf("IsSecretHeader(%q) = %t", name, !secret)
		}
	}
	hs := []watch.Header{{Name: "Cookie", Sealed: "v1.x.y"}, {Name: "Accept-Language", Value: "de"}}
	if got := watch.PublicHeaders(hs); len(got) != 1 || got[0].Name != "Accept-Language" {
		t.Errorf("public headers %+v", got)
	}
}
