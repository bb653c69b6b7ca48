package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A page's proxy from the command line: only a name of PORTALWATCH_PROXIES,
// shown by add, set, list, list --json and export; set --proxy with an
// empty name goes direct, and import takes the column.
func TestProxyByName(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	add := []string{"add", "http://127.0.0.1:9/portal", "--proxy", "corp"}
	if code, _, errOut := runCLI(t, e, add...); code != exitUsage || !strings.Contains(errOut, "PORTALWATCH_PROXIES is empty here") {
		t.Fatalf("add --proxy without a list: exit %d %q", code, errOut)
	}
	e["PORTALWATCH_PROXIES"] = "x=ftp://p:21"
	if code, _, errOut := runCLI(t, e, add...); code != exitUsage || !strings.Contains(errOut, "PORTALWATCH_PROXIES") || !strings.Contains(errOut, "want http, https, socks5 or socks5h") {
		t.Fatalf("a bad list: exit %d %q", code, errOut)
	}
	e["PORTALWATCH_PROXIES"] = "corp=http://user:hunter2@proxy.internal:3128,eu=socks5h://127.0.0.1:1080"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/portal", "--proxy", "us"); code != exitUsage ||
		!strings.Contains(errOut, `proxy "us" is not configured: PORTALWATCH_PROXIES names corp, eu`) {
		t.Fatalf("add --proxy us: exit %d %q", code, errOut)
	}
	code, out, errOut := runCLI(t, e, add...)
	if code != exitOK || !strings.Contains(out, "page 1: fetched through proxy corp") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	all := out
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"export"}, {"export", "--format", "opml"}, {"set", "1", "--proxy", "eu"}} {
		code, out, errOut := runCLI(t, e, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %q", args, code, errOut)
		}
		all += out + errOut
	}
	for _, want := range []string{" corp ", `"proxy":"corp"`, ",corp,homepage,\n", `pwProxy="corp"`, "page 1: fetched through proxy eu"} {
		if !strings.Contains(all, want) {
			t.Errorf("the output lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "hunter2") {
		t.Fatalf("a proxy's password was printed:\n%s", all)
	}
	if code, out, errOut := runCLI(t, e, "set", "1", "--proxy", ""); code != exitOK || !strings.Contains(out, "page 1: fetched direct") {
		t.Fatalf("set --proxy '': exit %d %q %q", code, out, errOut)
	}
	if p, err := st.Page(context.Background(), 1); err != nil || p.Proxy != "" {
		t.Fatalf("after set --proxy '': %q, %v", p.Proxy, err)
	}

	list := filepath.Join(t.TempDir(), "pages.csv")
	if err := os.WriteFile(list, []byte("url,proxy\nhttp://127.0.0.1:9/a,eu\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, e, "import", list); code != exitOK {
		t.Fatalf("import: exit %d %q %q", code, out, errOut)
	}
	if p, err := st.Page(context.Background(), 2); err != nil || p.Proxy != "eu" {
		t.Fatalf("imported page: %q, %v", p.Proxy, err)
	}
}
