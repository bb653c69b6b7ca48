package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestFormsEditRegionsAndKeywordRules drives the add and edit forms' region,
// keyword, same-site and burst settings through registration against the
// real database: each refusal is shown beside its field with nothing
// written, and an edit that changes what the page admits says that its next
// check re-baselines silently.
func TestFormsEditRegionsAndKeywordRules(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	w := e.writeTk
	ctx := context.Background()

	if _, body := e.get("/pages", w); !strings.Contains(body, `name="burst_detection" checked`) || !strings.Contains(body, `name="within"`) ||
		!strings.Contains(body, `name="articles" checked`) || !strings.Contains(body, "Read new links as articles") {
		t.Error("the add form does not offer regions, or burst detection or articles are not on by default")
	}
	refusals := []struct {
		field, input, value, want string
	}{
		{"within", "within", "div:has(a)", "not allowed"},
		{"exclude", "exclude", "nav[", "exclude"},
		{"include_text", "include_text", "(", "missing closing"},
		{"exclude_url", "exclude_url", "[", "missing closing"},
	}
	for _, c := range refusals {
		resp, body := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"5m"}, c.input: {c.value}})
		if resp.StatusCode != 422 || !strings.Contains(body, fmt.Sprintf(`id="%s-error"`, c.field)) || !strings.Contains(body, c.want) {
			t.Errorf("add with a bad %s %q: %d; want 422 with %q beside the field\n%s", c.field, c.value, resp.StatusCode, c.want, body)
		}
		if !strings.Contains(body, ">"+htmlEscaped(c.value)+"</textarea>") {
			t.Errorf("add with a bad %s: the input is not kept in its field", c.field)
		}
	}
	many := strings.Repeat("div\n", 11)
	if resp, body := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "within": {many}}); resp.StatusCode != 422 || !strings.Contains(body, `id="within-error"`) {
		t.Errorf("add with 11 region selectors: %d, want 422 beside within", resp.StatusCode)
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("refused forms wrote %d pages", n)
	}

	resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"5m"},
		"within": {"#latest-news\nmain .teasers"}, "exclude": {"nav"}, "include_text": {"florenz"}, "exclude_text": {"anzeige"},
		"include_url": {"/politik/"}, "exclude_url": {`\?ticker=`}, "same_site": {"on"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add with options: %d", resp.StatusCode)
	}
	pages, err := e.st.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("pages after add: %v, %v", pages, err)
	}
	p := pages[0]
	o := p.Options
	if !slices.Equal(o.Within, []string{"#latest-news", "main .teasers"}) || !slices.Equal(o.Exclude, []string{"nav"}) ||
		!slices.Equal(o.IncludeText, []string{"florenz"}) || !slices.Equal(o.ExcludeText, []string{"anzeige"}) ||
		!slices.Equal(o.IncludeURL, []string{"/politik/"}) || !slices.Equal(o.ExcludeURL, []string{`\?ticker=`}) ||
		!o.SameSiteOnly || p.BurstDetection || p.Articles {
		t.Fatalf("added %+v (burst detection %t, articles %t), want the form's options, burst detection and articles off",
			o, p.BurstDetection, p.Articles)
	}
	// Only a page with a baseline has anything to re-baseline.
	if _, err := e.pool.Exec(ctx, `UPDATE pages SET baseline_at = now() WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/pages/%d", p.ID)
	if _, body := e.get(path, w); !strings.Contains(body, ">#latest-news\nmain .teasers</textarea>") ||
		strings.Contains(body, `name="burst_detection" checked`) || !strings.Contains(body, `name="same_site" checked`) ||
		strings.Contains(body, `name="articles" checked`) {
		t.Errorf("the edit form does not show the page's options")
	}

	base := url.Values{"name": {"Local"}, "interval": {"5m"}, "within": {"#latest-news\nmain .teasers"}, "exclude": {"nav"},
		"include_text": {"florenz"}, "exclude_text": {"anzeige"}, "include_url": {"/politik/"}, "exclude_url": {`\?ticker=`},
		"same_site": {"on"}}
	with := func(k, v string) url.Values {
		out := url.Values{}
		for kk, vv := range base {
			out[kk] = vv
		}
		if v == "" {
			delete(out, k)
		} else {
			out.Set(k, v)
		}
		return out
	}
	resp, body := e.form(path, w, with("exclude_text", "(a"))
	if resp.StatusCode != 422 || !strings.Contains(body, `id="exclude_text-error"`) || !strings.Contains(body, "missing closing") {
		t.Errorf("edit with a bad exclude_text: %d", resp.StatusCode)
	}
	if got, _ := e.st.Page(ctx, p.ID); got.Name != "" || !slices.Equal(got.Options.ExcludeText, []string{"anzeige"}) {
		t.Errorf("a refused edit changed the page: %+v", got)
	}

	resp, _ = e.form(path, w, with("burst_detection", "on"))
	if got, _ := e.st.Page(ctx, p.ID); resp.StatusCode != http.StatusSeeOther || got.Name != "Local" || !got.BurstDetection || got.RebaselinePending {
		t.Errorf("edit of name and burst detection: %d, %+v", resp.StatusCode, got)
	}
	// Articles are no option of what the page admits: turning them on
	// re-baselines nothing.
	resp, _ = e.form(path, w, with("articles", "on"))
	if got, _ := e.st.Page(ctx, p.ID); resp.StatusCode != http.StatusSeeOther || !got.Articles || got.RebaselinePending {
		t.Errorf("edit turning articles on: %d, articles %t, rebaseline %t", resp.StatusCode, got.Articles, got.RebaselinePending)
	}
	if _, body := e.get(path, w); !strings.Contains(body, `name="articles" checked`) {
		t.Error("the edit form does not show articles on")
	}
	if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=saved&") {
		t.Errorf("an edit that leaves what the page admits alone says more than saved: %s", loc)
	}

	resp, _ = e.form(path, w, with("exclude", "nav\nfooter"))
	loc := resp.Header.Get("Location")
	if _, shown := e.get(loc, w); resp.StatusCode != http.StatusSeeOther || !strings.Contains(shown, "re-baselines silently") {
		t.Errorf("edit of a region: %d to %q; want the re-baseline said", resp.StatusCode, loc)
	}
	got, _ := e.st.Page(ctx, p.ID)
	if !slices.Equal(got.Options.Exclude, []string{"nav", "footer"}) || !got.RebaselinePending || got.BurstDetection {
		t.Errorf("after editing a region: %+v, rebaseline %t, burst %t", got.Options, got.RebaselinePending, got.BurstDetection)
	}
	if _, body := e.get(loc, w); !strings.Contains(body, "re-baselines silently") || !strings.Contains(body, `id="rebaseline"`) {
		t.Error("the page view does not say the next check re-baselines")
	}

	// An emptied textarea empties its list.
	if resp, _ := e.form(path, w, with("within", "")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("edit emptying within: %d", resp.StatusCode)
	}
	if got, _ := e.st.Page(ctx, p.ID); len(got.Options.Within) != 0 {
		t.Errorf("within after emptying it: %q", got.Options.Within)
	}
}

// htmlEscaped escapes s as html/template writes it in a textarea.
func htmlEscaped(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(s)
}
