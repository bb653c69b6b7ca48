package registration

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}

func TestCheckPage(t *testing.T) {
	pol := Policy{GuardURL: fetch.Guard(false, staticResolver{
		"news.example": {netip.MustParseAddr("93.184.216.34")},
		"db.example":   {netip.MustParseAddr("192.168.1.5")},
	})}
	ctx := context.Background()
	got, err := pol.CheckPage(ctx, watch.PageSpec{URL: "HTTP://News.Example/#top", Interval: time.Minute,
		Options: watch.LinkOptions{Ignore: []string{`\?page=\d+`}}})
	if err != nil || got.URL != "http://news.example/" {
		t.Fatalf("CheckPage = %+v, %v; want the URL normalised", got, err)
	}
	tests := []struct {
		page  watch.PageSpec
		field string
		msg   string
	}{
		{watch.PageSpec{URL: "http://db.example/", Interval: time.Minute}, "url", "a private address"},
		{watch.PageSpec{URL: "http://app.localhost/", Interval: time.Minute}, "url", "localhost name"},
		{watch.PageSpec{URL: "ftp://news.example/", Interval: time.Minute}, "url", "scheme"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Second}, "interval", "shortest is 10s"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{Ignore: []string{`\w{1000}x`}}}, "ignore", "repetitions"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{Within: []string{"main > "}}}, "within", `within selector "main > " is not a valid CSS selector`},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{Exclude: []string{"div:has(.ad)"}}}, "exclude", "uses :has"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{Within: many(6, "main"), Exclude: many(5, "nav")}}, "options", "11 region selectors"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{IncludeText: []string{"(ukraine"}}}, "includeText", "RE2 syntax"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{ExcludeText: many(21, "ad")}}, "excludeText", "at most 20"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{IncludeURL: []string{""}}}, "includeUrl", "empty pattern"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{ExcludeURL: []string{`a{101}`}}}, "excludeUrl", "repetitions"},
		{watch.PageSpec{URL: "http://news.example/", Interval: time.Minute, Options: watch.LinkOptions{
			Ignore: many(3, strings.Repeat("a", watch.MaxPatternInsts-2)), IncludeText: many(3, strings.Repeat("b", watch.MaxPatternInsts-2))}}, "options", "together"},
	}
	for _, tt := range tests {
		_, err := pol.CheckPage(ctx, tt.page)
		var refused *watch.RefusedError
		if !errors.As(err, &refused) || refused.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("CheckPage(%+v) = %v, want a refusal of %s saying %q", tt.page, err, tt.field, tt.msg)
		}
	}
	// Everything wrong at once, each refusal naming its field, so that a
	// form shows them all beside their fields.
	_, err = pol.CheckPage(ctx, watch.PageSpec{URL: "news.example", Interval: time.Second, Name: "bad\x00name",
		Options: watch.LinkOptions{Within: []string{"main > "}, IncludeText: []string{"(x"}}})
	var fields []string
	for _, r := range watch.RefusalsOf(err) {
		fields = append(fields, r.Field)
	}
	if got := strings.Join(fields, " "); got != "url interval includeText name within" {
		t.Errorf("CheckPage of five bad fields refused %q (%v), want url interval includeText name within", got, err)
	}
	if _, err := (Policy{}).CheckURL(ctx, "http://news.example/"); err == nil {
		t.Error("a Policy without GuardURL admitted a URL; it must admit nothing")
	}
	if _, err := (Policy{GuardURL: fetch.Guard(true, nil)}).CheckPage(ctx, watch.PageSpec{URL: "http://app.localhost/", Interval: time.Minute}); err != nil {
		t.Errorf("localhost with AllowPrivate: %v", err)
	}
}

func many(n int, s string) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = s
	}
	return l
}

// TestCheckEdit: each list an edit sets is checked on its own (the
// grammar of selectors too), then with the page's other lists.
func TestCheckEdit(t *testing.T) {
	short, ok := 5*time.Second, time.Minute
	bad, good := []string{"("}, []string{`\?p=\d+`}
	badSel, goodSel := []string{"main["}, []string{"main .latest", "#top-stories"}
	for _, e := range []watch.PageEdit{{Interval: &short}, {Ignore: &bad}, {Interval: &ok, Ignore: &bad},
		{Within: &badSel}, {Exclude: &badSel}, {IncludeText: &bad}, {ExcludeText: &bad}, {IncludeURL: &bad}, {ExcludeURL: &bad}} {
		var refused *watch.RefusedError
		if _, err := (Policy{}).CheckEdit(e, watch.LinkOptions{}); !errors.As(err, &refused) {
			t.Errorf("CheckEdit(%+v) = %v, want a refusal", e, err)
		}
	}
	for _, e := range []watch.PageEdit{{}, {Interval: &ok}, {Ignore: &good}, {Ignore: &[]string{}}, {Within: &goodSel}, {Exclude: &goodSel},
		{IncludeText: &good}, {ExcludeText: &good}, {IncludeURL: &good}, {ExcludeURL: &good}} {
		if _, err := (Policy{}).CheckEdit(e, watch.LinkOptions{}); err != nil {
			t.Errorf("CheckEdit(%+v) = %v, want nil", e, err)
		}
	}
	// Six more selectors are fine alone, not beside the page's five.
	six := many(6, "main")
	_, err := (Policy{}).CheckEdit(watch.PageEdit{Within: &six}, watch.LinkOptions{Exclude: many(5, "nav")})
	var refused *watch.RefusedError
	if !errors.As(err, &refused) || refused.Field != "options" {
		t.Errorf("CheckEdit over the page's selectors = %v, want a refusal of the options", err)
	}
}

// A subscription's tag follows pages' tag rule, so it can name only a tag a
// page can carry, spelled as pages store it.
func TestCheckTagFollowsPagesTagRule(t *testing.T) {
	if got, err := CheckTag(" Politik "); err != nil || got != "politik" {
		t.Errorf("CheckTag(Politik) = %q, %v; want politik", got, err)
	}
	for _, bad := range []string{"", "a b", "news/eu", strings.Repeat("x", watch.MaxTagRunes+1)} {
		var refused *watch.RefusedError
		if _, err := CheckTag(bad); !errors.As(err, &refused) || refused.Field != "tag" {
			t.Errorf("CheckTag(%q) = %v, want a refusal of the tag", bad, err)
		}
	}
}

// A page may name only a proxy of the deployment's list, and the refusal
// lists the names there are, or says there are none here.
func TestCheckProxy(t *testing.T) {
	pol := Policy{Proxies: []string{"corp", "eu-exit"}}
	for _, name := range []string{"", "corp", "eu-exit"} {
		if err := pol.CheckProxy(name); err != nil {
			t.Errorf("CheckProxy(%q) = %v", name, err)
		}
	}
	tests := []struct {
		pol  Policy
		name string
		msg  string
	}{
		{pol, "us", `proxy "us" is not configured: PORTALWATCH_PROXIES names corp, eu-exit`},
		{pol, "Corp!", "not a proxy name"},
		{Policy{}, "corp", "PORTALWATCH_PROXIES is empty here"},
	}
	for _, tt := range tests {
		err := tt.pol.CheckProxy(tt.name)
		var refused *watch.RefusedError
		if !errors.As(err, &refused) || refused.Field != "proxy" || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("CheckProxy(%q) = %v, want a refusal of the proxy saying %q", tt.name, err, tt.msg)
		}
	}
	us := "us"
	if _, err := pol.CheckEdit(watch.PageEdit{Proxy: &us}, watch.LinkOptions{}); !strings.Contains(fmt.Sprint(err), "names corp, eu-exit") {
		t.Errorf("CheckEdit to proxy us = %v", err)
	}
	none := ""
	if e, err := pol.CheckEdit(watch.PageEdit{Proxy: &none}, watch.LinkOptions{}); err != nil || e.Proxy == nil || *e.Proxy != "" {
		t.Errorf("CheckEdit to no proxy = %+v, %v", e, err)
	}
	spec := watch.PageSpec{URL: "http://news.example/", Proxy: "us"}
	pol.GuardURL = fetch.Guard(false, staticResolver{"news.example": {netip.MustParseAddr("93.184.216.34")}})
	if _, err := pol.CheckPage(context.Background(), spec); !strings.Contains(fmt.Sprint(err), `proxy "us"`) {
		t.Errorf("CheckPage with proxy us = %v", err)
	}
}
