package main

import (
	"context"
	"strings"
	"testing"
)

const testSecretsKey = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="

// Request headers from the command line: a cookie needs the key, is shown
// only as set (add, set, list, list --json, export), and set merges by
// name.
func TestHeadersNeverPrintASecret(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	const cookie = "session=s3cr3t"
	add := []string{"add", "http://127.0.0.1:9/members", "--header", "Cookie: " + cookie, "--header", "accept-language: de"}

	code, out, errOut := runCLI(t, e, add...)
	if code != exitUsage || !strings.Contains(errOut, "PORTALWATCH_SECRETS_KEY") || !strings.Contains(errOut, "openssl rand -base64 32") {
		t.Fatalf("add with a cookie and no key: exit %d %q %q; want 2 saying how to make a key", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/x", "--header", "Host: intranet"); code != exitUsage ||
		!strings.Contains(errOut, "header Host is not allowed") {
		t.Fatalf("add with Host: exit %d %q", code, errOut)
	}

	e["PORTALWATCH_SECRETS_KEY"] = testSecretsKey
	code, out, errOut = runCLI(t, e, add...)
	if code != exitOK || !strings.Contains(out, "headers Cookie: (set); Accept-Language: de") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	all := out
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"export"}, {"export", "--format", "opml"},
		{"set", "1", "--header", "Accept-Language: fr"}} {
		code, out, errOut := runCLI(t, e, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %q", args, code, errOut)
		}
		all += out + errOut
	}
	if strings.Contains(all, "s3cr3t") {
		t.Fatalf("the cookie was printed:\n%s", all)
	}
	if !strings.Contains(all, `"headers":{"Accept-Language":"de","Cookie":"(set)"}`) || !strings.Contains(all, "headers Cookie: (set); Accept-Language: fr") {
		t.Fatalf("want the headers shown, the cookie as set:\n%s", all)
	}
	p, err := st.Page(context.Background(), 1)
	if err != nil || len(p.Headers) != 2 || p.Headers[0].Sealed == "" {
		t.Fatalf("page headers %+v, %v", p.Headers, err)
	}
	if code, out, errOut := runCLI(t, e, "set", "1", "--clear-headers"); code != exitOK || !strings.Contains(out, "no request headers") {
		t.Fatalf("set --clear-headers: exit %d %q %q", code, out, errOut)
	}
}
