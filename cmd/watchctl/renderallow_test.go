package main

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// --render-allow takes hosts repeated or comma-separated, refuses an
// address with what to give instead, and "" clears the list.
func TestRenderAllowHosts(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/spa", "--render", "--render-allow", "10.0.0.5"); code != exitUsage ||
		!strings.Contains(errOut, "an IP address is not allowed") {
		t.Fatalf("an address: exit %d %q", code, errOut)
	}
	code, out, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/spa", "--render", "--render-allow", "CDN.example.net,api.example.org:8443", "--render-allow", "static.example.org")
	if code != exitOK || !strings.Contains(out, "also from cdn.example.net, api.example.org:8443, static.example.org") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, e, "list", "--json"); code != exitOK || !strings.Contains(out, `"render_allow":["cdn.example.net","api.example.org:8443","static.example.org"]`) {
		t.Fatalf("list --json: %q", out)
	}
	if code, out, errOut := runCLI(t, e, "set", "1", "--render-allow", ""); code != exitOK || !strings.Contains(out, "from its own site only") {
		t.Fatalf("set --render-allow '': exit %d %q %q", code, out, errOut)
	}
	if p, err := st.Page(context.Background(), 1); err != nil || len(p.RenderAllow) != 0 {
		t.Fatalf("after clearing: %q, %v", p.RenderAllow, err)
	}
	if code, _, _ := runCLI(t, e, "set", "1", "--render-allow", "cdn.example.net"); code != exitOK {
		t.Fatalf("set --render-allow: exit %d", code)
	}
	if p, err := st.Page(context.Background(), 1); err != nil || !slices.Equal(p.RenderAllow, []string{"cdn.example.net"}) {
		t.Fatalf("after setting: %q, %v", p.RenderAllow, err)
	}
}
