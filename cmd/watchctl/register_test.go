package main

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// loopbackResolver answers every name with 127.0.0.1, as a name of a host
// on the operator's own network would resolve; "down.example" fails as a
// broken DNS server does.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "down.example":
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
	case "nosuch.example":
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	case "public.example":
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3")}, nil
}

func runResolved(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWith(context.Background(), args, e.get, &out, &errOut, loopbackResolver{})
	return code, out.String(), errOut.String()
}

func TestAddResolvesNamesAndRefusesPrivateOnes(t *testing.T) {
	e, st := migrated(t)
	refusals := []struct{ url, why string }{
		{"http://redis.internal:6379/", "resolves to 127.0.0.1, a loopback address"},
		{"http://nosuch.example/", "no such host"},
	}
	for _, tt := range refusals {
		code, out, errOut := runResolved(t, e, "add", tt.url)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.why) {
			t.Errorf("add %s: exit %d, stdout %q, stderr %q; want 2 and one line saying %q", tt.url, code, out, errOut, tt.why)
		}
	}
	// localhost names are refused by name, through the system's resolver.
	for _, u := range []string{"http://localhost:6379/", "http://app.localhost/"} {
		code, _, errOut := runCLI(t, e, "add", u)
		if code != exitUsage || !strings.Contains(errOut, "localhost name") || !strings.Contains(errOut, "PORTALWATCH_ALLOW_PRIVATE") {
			t.Errorf("add %s: exit %d %q, want 2 naming localhost and the setting", u, code, errOut)
		}
	}
	// A resolver that fails says nothing about the name: exit 1, not 2.
	if code, _, errOut := runResolved(t, e, "add", "http://down.example/"); code != exitError || !strings.Contains(errOut, "server misbehaving") {
		t.Errorf("add with a failing resolver: exit %d %q, want 1", code, errOut)
	}
	if pages, err := st.Pages(context.Background()); err != nil || len(pages) != 0 {
		t.Fatalf("refused adds wrote %d pages (%v)", len(pages), err)
	}

	if code, out, errOut := runResolved(t, e, "add", "http://public.example/"); code != exitOK || !strings.Contains(out, "watching page") {
		t.Errorf("add of a public name: exit %d %q %q", code, out, errOut)
	}
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	for _, u := range []string{"http://redis.internal:6379/", "http://localhost:8080/"} {
		if code, _, errOut := runResolved(t, e, "add", u); code != exitOK {
			t.Errorf("add %s with private addresses allowed: exit %d %q", u, code, errOut)
		}
	}
}

func TestIgnorePatternCapsRefuseWithExitTwoAndWriteNothing(t *testing.T) {
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	tooMany := []string{"add", "http://127.0.0.1:9/many"}
	for range 21 {
		tooMany = append(tooMany, "--ignore", `\?p=\d+`)
	}
	tests := []struct {
		args []string
		why  string
	}{
		{[]string{"add", "http://127.0.0.1:9/a", "--ignore", `\w{1000}x`}, "at most 100 repetitions"},
		{[]string{"add", "http://127.0.0.1:9/a", "--ignore", `(\w{100}){10}`}, "instructions"},
		{[]string{"add", "http://127.0.0.1:9/a", "--ignore", strings.Repeat("x", 300)}, "the longest allowed is 256"},
		{[]string{"add", "http://127.0.0.1:9/a", "--ignore", ""}, "empty pattern"},
		{tooMany, "21 ignore patterns; at most 20"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, e, tt.args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.why) || len(errOut) > 300 {
			t.Errorf("%.60q: exit %d %q, want 2 and one short line saying %q", tt.args, code, errOut, tt.why)
		}
	}
	if pages, _ := st.Pages(context.Background()); len(pages) != 0 {
		t.Fatalf("refused adds wrote %d pages", len(pages))
	}

	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--ignore", `\?p=\d+`); code != exitOK {
		t.Fatalf("add: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "set", "1", "--ignore", `\w{1000}x`, "--interval", "1m"); code != exitUsage || !strings.Contains(errOut, "repetitions") {
		t.Errorf("set with a refused pattern: exit %d %q", code, errOut)
	}
	p, err := st.Page(context.Background(), 1)
	if err != nil || len(p.Options.Ignore) != 1 || p.Options.Ignore[0] != `\?p=\d+` || p.Interval == time.Minute {
		t.Fatalf("a refused set changed the page: %+v (%v)", p, err)
	}
}
