package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/secrets"
)

// The API takes a page's headers as an object, shows a secret only as
// "(set)" (a page, the list, the export), merges an edit by name, and
// refuses a secret when it has no key to seal it with.
func TestAPIHeadersNeverShowASecret(t *testing.T) {
	e := newEnv(t)
	w := e.writeTk
	const cookie = "session=s3cr3t"
	body := `{"url":"http://127.0.0.1:9/members","headers":{"Cookie":"` + cookie + `","accept-language":"de"}}`
	resp, b := e.do("POST", "/api/v1/pages", w, body)
	p := decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "headers" || !strings.Contains(p.Detail, "PORTALWATCH_SECRETS_KEY") {
		t.Fatalf("a cookie without a key: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/x","headers":{"Connection":"close"}}`)
	if p := decode[problemDetails](t, b); resp.StatusCode != 422 || !strings.Contains(p.Detail, "hop-by-hop") {
		t.Fatalf("Connection: %d %s", resp.StatusCode, b)
	}

	key, err := secrets.ParseKey("a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = e.serve(e.st.WithSealer(key))
	resp, b = e.do("POST", "/api/v1/pages", w, body)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	page := decode[pageJSON](t, b)
	if page.Headers["Cookie"] != "(set)" || page.Headers["Accept-Language"] != "de" {
		t.Fatalf("created headers %v", page.Headers)
	}
	path := fmt.Sprintf("/api/v1/pages/%d", page.ID)
	all := string(b)
	for _, get := range []string{path, "/api/v1/pages", "/api/v1/pages/export?format=csv", "/api/v1/pages/export?format=opml"} {
		resp, b := e.do("GET", get, e.readTok, "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", get, resp.StatusCode, b)
		}
		all += string(b)
	}
	// The page as read, sent back, changes nothing; a null removes a header.
	resp, b = e.do("PATCH", path, w, `{"headers":{"Cookie":"(set)","Accept-Language":null,"Referer":"https://a.example/"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	all += string(b)
	page = decode[pageJSON](t, b)
	if len(page.Headers) != 2 || page.Headers["Cookie"] != "(set)" || page.Headers["Referer"] != "https://a.example/" {
		t.Fatalf("patched headers %v", page.Headers)
	}
	if strings.Contains(all, "s3cr3t") {
		t.Fatalf("the API showed the cookie:\n%s", all)
	}
	stored, err := e.st.Page(context.Background(), page.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := key.Open(page.ID, "Cookie", stored.Headers[0].Sealed); err != nil || v != cookie {
		t.Fatalf("the stored cookie opens as %q, %v", v, err)
	}
	resp, b = e.do("PATCH", path, w, `{"clear_headers":true}`)
	if resp.StatusCode != 200 || len(decode[pageJSON](t, b).Headers) != 0 {
		t.Fatalf("clear: %d %s", resp.StatusCode, b)
	}
}

// The page form takes headers a line each, shows a secret only as (set),
// and a form sent back as shown keeps the secret; a deleted line removes
// its header.
func TestFormHeadersKeepTheSecretUnseen(t *testing.T) {
	e := newEnv(t)
	key, err := secrets.ParseKey("a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = e.serve(e.st.WithSealer(key))
	noRedirects(e)
	w := e.writeTk
	if resp, body := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "headers": {"Upgrade: h2c"}}); resp.StatusCode != 422 ||
		!strings.Contains(body, `id="headers-error"`) || !strings.Contains(body, "hop-by-hop") {
		t.Fatalf("add with Upgrade: %d\n%s", resp.StatusCode, body)
	}
	resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"5m"}, "burst_detection": {"on"},
		"headers": {"Cookie: session=s3cr3t\nAccept-Language: de"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add with headers: %d", resp.StatusCode)
	}
	_, body := e.get("/pages/1", w)
	if strings.Contains(body, "s3cr3t") || !strings.Contains(body, "Cookie: (set)\nAccept-Language: de</textarea>") {
		t.Fatalf("the page form shows:\n%s", body)
	}
	resp, _ = e.form("/pages/1", w, url.Values{"interval": {"5m"}, "burst_detection": {"on"}, "headers": {"Cookie: (set)\nAccept-Language: fr"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", resp.StatusCode)
	}
	p, err := e.st.Page(context.Background(), 1)
	if err != nil || len(p.Headers) != 2 {
		t.Fatalf("page %+v, %v", p.Headers, err)
	}
	if v, err := key.Open(1, "Cookie", p.Headers[0].Sealed); err != nil || v != "session=s3cr3t" || p.Headers[1].Value != "fr" {
		t.Fatalf("after the edit: cookie %q (%v), headers %+v", v, err, p.Headers)
	}
	if resp, _ = e.form("/pages/1", w, url.Values{"interval": {"5m"}, "headers": {""}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", resp.StatusCode)
	}
	if p, _ := e.st.Page(context.Background(), 1); p.Headers != nil {
		t.Fatalf("an emptied field kept %+v", p.Headers)
	}
}
