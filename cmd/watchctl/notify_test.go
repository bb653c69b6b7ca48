package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNotifyCommands(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	// Refused: one line, exit 2, nothing written.
	bad := [][]string{
		{"notify", "add", "webhook", srv.URL},                                    // loopback without PORTALWATCH_ALLOW_PRIVATE
		{"notify", "add", "webhook", "ftp://example.com/"},                       // not http
		{"notify", "add", "email", "not an address"},                             // malformed
		{"notify", "add", "email", "a@example.com", "--digest", "weekly"},        // unknown digest
		{"notify", "add", "email", "a@example.com", "--page", "1", "--tag", "x"}, // two scopes
		{"notify", "add", "email", "a@example.com", "--page", "42"},              // no such page
		{"notify", "add", "email", "a@example.com", "--tag", "two words"},        // bad tag
		{"notify", "add", "email", "a@example.com", "--wait-article", "11m"},     // over the maximum
		{"notify", "add", "webhook", "https://example.com/", "--wait-article", "soon"},
		{"notify", "add", "email", "a@example.com", "--events", "page.degraded,page.gone"}, // unknown kind
		{"notify", "set", "7", "--events", "page.degraded"},                                // no such subscription
		{"notify", "remove", "7"},
		{"notify", "test", "abc"},
	}
	for _, args := range bad {
		code, out, errOut := runCLI(t, e, args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, code, out, errOut)
		}
	}
	if subs, err := st.Subscriptions(context.Background()); err != nil || len(subs) != 0 {
		t.Fatalf("refused input wrote %d subscriptions (%v)", len(subs), err)
	}

	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	code, out, errOut := runCLI(t, e, "notify", "add", "webhook", srv.URL+"/hook?token=abc")
	if code != exitOK || !strings.Contains(out, "signing secret") || !strings.Contains(out, "whsec_") {
		t.Fatalf("add webhook: exit %d\n%s%s", code, out, errOut)
	}
	var hook, mail string
	fmt.Sscanf(out, "subscription %s", &hook)
	code, out, errOut = runCLI(t, e, "notify", "add", "email", "Desk <desk@example.com>", "--digest", "daily", "--tag", "ministries",
		"--wait-article", "90s", "--events", "page.recovered, page.degraded")
	if code != exitOK || !strings.Contains(out, "desk@example.com for tag ministries, digest daily, waiting up to 1m30s for articles, "+
		"and events page.degraded,page.recovered") {
		t.Fatalf("add email: exit %d\n%s%s", code, out, errOut)
	}
	fmt.Sscanf(out, "subscription %s", &mail)
	hook, mail = strings.TrimSuffix(hook, ":"), strings.TrimSuffix(mail, ":")
	code, out, _ = runCLI(t, e, "notify", "list")
	if code != exitOK || !strings.Contains(out, "/hook?token=xxxxx") || strings.Contains(out, "token=abc") || !strings.Contains(out, "all pages") || strings.Contains(out, "whsec_") {
		t.Fatalf("list: exit %d, want both subscriptions, the receiver's token masked and no secret:\n%s", code, out)
	}
	if !strings.Contains(out, "WAIT ARTICLE") || !strings.Contains(out, " 1m30s ") || !strings.Contains(out, " page.degraded,page.recovered ") {
		t.Fatalf("list: want the e-mail subscription's wait for articles and its events:\n%s", out)
	}
	code, out, errOut = runCLI(t, e, "notify", "set", hook, "--events", "link.rewritten")
	if code != exitOK || !strings.Contains(out, "subscription "+hook+": events link.rewritten for all pages") {
		t.Fatalf("set events: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runCLI(t, e, "notify", "set", hook, "--events", ""); code != exitOK || !strings.Contains(out, "no events, updates only") {
		t.Fatalf("set no events: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, e, "notify", "test", hook); code != exitOK || !strings.Contains(out, "delivered") {
		t.Fatalf("test: exit %d\n%s%s", code, out, errOut)
	}
	h := <-got
	if !strings.HasPrefix(h.Get("webhook-signature"), "v1,") || !strings.HasPrefix(h.Get("webhook-id"), "msg_test_"+hook+"_") {
		t.Fatalf("test message headers %v", h)
	}
	if code, out, errOut := runCLI(t, e, "notify", "test", mail); code != exitError || !strings.Contains(errOut, "PORTALWATCH_SMTP_URL") {
		t.Fatalf("test e-mail without SMTP: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, e, "notify", "remove", hook); code != exitOK {
		t.Fatalf("remove: exit %d", code)
	}
	if subs, _ := st.Subscriptions(context.Background()); len(subs) != 1 || fmt.Sprint(subs[0].ID) != mail {
		t.Fatalf("after remove: %+v", subs)
	}
}
