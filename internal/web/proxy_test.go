package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func withProxies(names ...string) envOption {
	return func(c *Config) { c.Policy.Proxies = names }
}

// The API takes a page's proxy by name, only a name of the deployment's
// list, shows it, changes and clears it, and carries it in the export and
// the import.
func TestAPIProxyByName(t *testing.T) {
	e := newEnv(t, withProxies("corp", "eu"))
	w := e.writeTk
	resp, b := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/x","proxy":"us"}`)
	p := decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "proxy" || !strings.Contains(p.Detail, "PORTALWATCH_PROXIES names corp, eu") {
		t.Fatalf("an unknown proxy: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/x","proxy":"corp"}`)
	if resp.StatusCode != 201 || decode[pageJSON](t, b).Proxy != "corp" {
		t.Fatalf("create through corp: %d %s", resp.StatusCode, b)
	}
	id := decode[pageJSON](t, b).ID
	path := fmt.Sprintf("/api/v1/pages/%d", id)
	if resp, b := e.do("GET", path, e.readTok, ""); resp.StatusCode != 200 || decode[pageJSON](t, b).Proxy != "corp" {
		t.Fatalf("read: %d %s", resp.StatusCode, b)
	}
	for _, tt := range []struct{ body, want string }{{`{"proxy":"eu"}`, "eu"}, {`{"name":"X"}`, "eu"}, {`{"proxy":""}`, ""}} {
		resp, b := e.do("PATCH", path, w, tt.body)
		if resp.StatusCode != 200 || decode[pageJSON](t, b).Proxy != tt.want {
			t.Fatalf("patch %s: %d %s, want proxy %q", tt.body, resp.StatusCode, b, tt.want)
		}
	}
	if resp, b := e.do("PATCH", path, w, `{"proxy":"Bad Name"}`); resp.StatusCode != 422 || !strings.Contains(string(b), "not a proxy name") {
		t.Fatalf("patch to a bad name: %d %s", resp.StatusCode, b)
	}

	if resp, b := e.do("PATCH", path, w, `{"proxy":"corp"}`); resp.StatusCode != 200 {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	for _, format := range []string{"csv", "opml"} {
		_, b := e.do("GET", "/api/v1/pages/export?format="+format, e.readTok, "")
		if !strings.Contains(string(b), map[string]string{"csv": ",corp,homepage,\n", "opml": `pwProxy="corp"`}[format]) {
			t.Errorf("%s export without the proxy:\n%s", format, b)
		}
	}
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", w, "url,proxy\nhttp://127.0.0.1:9/a,eu\nhttp://127.0.0.1:9/b,us\n")
	if resp.StatusCode != 422 || !strings.Contains(string(b), `proxy \"us\" is not configured`) {
		t.Fatalf("import with an unknown proxy: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", w, "url,proxy\nhttp://127.0.0.1:9/a,eu\nhttp://127.0.0.1:9/b,\n")
	if pages := decode[struct{ Pages []pageJSON }](t, b).Pages; resp.StatusCode != 201 || len(pages) != 2 || pages[0].Proxy != "eu" || pages[1].Proxy != "" {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
}

// The page form offers the configured proxies in a choice, keeps the one
// chosen, and goes direct again when Direct is chosen; without a list it
// shows no choice.
func TestFormChoosesAProxy(t *testing.T) {
	e := newEnv(t, withProxies("corp", "eu"))
	noRedirects(e)
	w := e.writeTk
	_, body := e.get("/pages", w)
	if !strings.Contains(body, `<select id="proxy" name="proxy"`) || !strings.Contains(body, `<option value="eu">eu</option>`) {
		t.Fatalf("the add form has no choice of proxies:\n%s", body)
	}
	if resp, body := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "proxy": {"us"}}); resp.StatusCode != 422 ||
		!strings.Contains(body, `id="proxy-error"`) {
		t.Fatalf("add with an unknown proxy: %d\n%s", resp.StatusCode, body)
	}
	resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"5m"}, "proxy": {"eu"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add through eu: %d", resp.StatusCode)
	}
	_, body = e.get("/pages/1", w)
	if !strings.Contains(body, `<option value="eu" selected>eu</option>`) {
		t.Fatalf("the page form does not show eu chosen:\n%s", body)
	}
	if resp, _ = e.form("/pages/1", w, url.Values{"interval": {"5m"}, "proxy": {""}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit to direct: %d", resp.StatusCode)
	}
	if p, err := e.st.Page(context.Background(), 1); err != nil || p.Proxy != "" {
		t.Fatalf("after choosing direct: %q, %v", p.Proxy, err)
	}

	// A proxy dropped from the list since is shown as such, still chosen.
	if _, err := e.pool.Exec(context.Background(), `UPDATE pages SET proxy = 'gone' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, body = e.get("/pages/1", w); !strings.Contains(body, `<option value="gone" selected>gone (not in PORTALWATCH_PROXIES)</option>`) {
		t.Fatalf("the page form hides the unlisted proxy:\n%s", body)
	}

	bare := newEnv(t)
	if _, body := bare.get("/pages", bare.writeTk); strings.Contains(body, `name="proxy"`) {
		t.Fatal("a deployment without proxies shows a choice of them")
	}
}
