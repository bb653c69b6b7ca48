package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var secretShown = regexp.MustCompile(`value="(whsec_[^"]+)"`)

func TestNotificationsPageAddsTestsResumesAndRemoves(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	page := e.addPage("http://127.0.0.1:9/news")
	rc := newReceiver(t, http.StatusOK)

	resp, body := e.get("/notifications", e.writeTk)
	if resp.StatusCode != 200 || !strings.Contains(body, "Add a webhook") || !strings.Contains(body, "Add an e-mail subscription") ||
		!strings.Contains(body, `href="/notifications"`) || !strings.Contains(body, `name="viewport"`) {
		t.Fatalf("GET /notifications: %d\n%s", resp.StatusCode, body)
	}

	resp, body = e.form("/notifications", e.writeTk, url.Values{"channel": {"webhook"}, "url": {rc.URL + "/hook"}, "page_id": {fmt.Sprint(page)}})
	m := secretShown.FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("add webhook: %d, secret shown: %v\n%s", resp.StatusCode, m != nil, body)
	}
	secret := html.UnescapeString(m[1])
	subs, err := e.st.Subscriptions(context.Background())
	if err != nil || len(subs) != 1 || subs[0].Secret != secret || subs[0].PageID != page || subs[0].Target != rc.URL+"/hook" {
		t.Fatalf("stored %+v (%v), want the webhook with the secret shown", subs, err)
	}
	id := subs[0].ID
	if _, body = e.get("/notifications", e.writeTk); strings.Contains(html.UnescapeString(body), secret) || !strings.Contains(body, rc.URL+"/hook") {
		t.Fatal("the list shows the secret again, or not the webhook")
	}
	if resp, _ := e.get("/notifications", e.readTok); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a read token opened the subscriptions: %d", resp.StatusCode)
	}

	for _, id := range []string{"wh-ev-link-rewritten", "wh-ev-page-degraded", "em-ev-page-recovered"} {
		if !strings.Contains(body, `id="`+id+`" name="events"`) {
			t.Errorf("the forms have no checkbox %s", id)
		}
	}
	resp, body = e.form("/notifications", e.writeTk, url.Values{"channel": {"email"}, "address": {"desk@example.com"}, "digest": {"daily"},
		"tag": {"ministry"}, "wait_article": {"45s"}, "events": {"page.recovered", "page.degraded"}})
	if resp.StatusCode != 200 || secretShown.MatchString(body) || e.subscriptionCount() != 2 {
		t.Fatalf("add e-mail: %d, %d subscriptions", resp.StatusCode, e.subscriptionCount())
	}
	if !strings.Contains(body, "daily, waits up to 45s for articles") || !strings.Contains(body, "and page.degraded, page.recovered") {
		t.Fatalf("the list does not show the e-mail subscription's wait for articles and events:\n%s", body)
	}

	// A paused subscription shows why, and offers to resume.
	if _, err := e.pool.Exec(context.Background(), `UPDATE subscriptions SET paused_at = now(), paused_reason = 'receiver answered 410' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, body = e.get("/notifications", e.writeTk); !strings.Contains(body, "receiver answered 410") ||
		!strings.Contains(body, fmt.Sprintf(`action="/notifications/%d/resume"`, id)) {
		t.Fatalf("paused subscription not shown with its reason and a resume button:\n%s", body)
	}
	// Removing is destructive and looks it, as on the page view.
	if !strings.Contains(body, fmt.Sprintf(`action="/notifications/%d/delete" class="inline"><button type="submit" class="danger">`, id)) {
		t.Fatalf("the remove button is not marked as destructive:\n%s", body)
	}

	// A test's outcome names the receiver: it is shown on the page the
	// request returns, never carried in a redirect.
	resp, body = e.form(fmt.Sprintf("/notifications/%d/test", id), e.writeTk, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Test message delivered to "+rc.URL+"/hook (response 200)") {
		t.Errorf("test: %d, Location %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	for _, tt := range []struct{ action, done, said string }{
		{"resume", "subscription-resumed", fmt.Sprintf("Subscription %d will be tried again now", id)},
		{"delete", "subscription-removed", fmt.Sprintf("Removed subscription %d", id)},
	} {
		resp, _ = e.form(fmt.Sprintf("/notifications/%d/%s", id, tt.action), e.writeTk, nil)
		want := fmt.Sprintf("/notifications?done=%s&n=%d", tt.done, id)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("%s: %d to %q, want 303 to %q", tt.action, resp.StatusCode, resp.Header.Get("Location"), want)
		}
		if _, body := e.get(want, e.writeTk); !strings.Contains(body, tt.said) {
			t.Errorf("%s: the page does not say %q", tt.action, tt.said)
		}
	}
	if n := len(rc.received()); n != 1 {
		t.Errorf("receiver got %d test messages, want 1", n)
	}
	if n := e.subscriptionCount(); n != 1 {
		t.Errorf("%d subscriptions after removing one of two", n)
	}
	for _, path := range []string{fmt.Sprintf("/notifications/%d/test", id), "/notifications/1/rename", "/notifications/x/delete"} {
		if resp, _ := e.form(path, e.writeTk, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestNotificationFormsShowRefusalsBesideTheFieldAndWriteNothing(t *testing.T) {
	e := newEnv(t)
	page := e.addPage("http://127.0.0.1:9/news")
	for _, tt := range []struct {
		values  url.Values
		fieldID string
	}{
		{url.Values{"channel": {"webhook"}, "url": {"ftp://example.com/x"}}, "wh-url-error"},
		{url.Values{"channel": {"webhook"}, "url": {""}}, "wh-url-error"},
		{url.Values{"channel": {"webhook"}, "url": {"http://127.0.0.1:9/h"}, "tag": {"two words"}}, "wh-tag-error"},
		{url.Values{"channel": {"email"}, "address": {"nobody"}}, "em-address-error"},
		{url.Values{"channel": {"email"}, "address": {"a@example.com"}, "page_id": {"abc"}}, "em-page-error"},
		{url.Values{"channel": {"email"}, "address": {"a@example.com"}, "page_id": {"99999"}}, "em-page-error"},
		{url.Values{"channel": {"email"}, "address": {"a@example.com"}, "page_id": {fmt.Sprint(page)}, "tag": {"t"}}, "em-tag-error"},
		{url.Values{"channel": {"email"}, "address": {"a@example.com"}, "wait_article": {"1h"}}, "em-wait-error"},
		{url.Values{"channel": {"webhook"}, "url": {"http://127.0.0.1:9/h"}, "wait_article": {"soon"}}, "wh-wait-error"},
		{url.Values{"channel": {"email"}, "address": {"a@example.com"}, "events": {"page.degraded", "page.lost"}}, "em-events-error"},
	} {
		resp, body := e.form("/notifications", e.writeTk, tt.values)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="`+tt.fieldID+`"`) {
			t.Errorf("%v = %d, want 422 with #%s\n%s", tt.values, resp.StatusCode, tt.fieldID, body)
		}
		// What was typed is kept for correction.
		if v := tt.values.Get("address"); v != "" && !strings.Contains(body, `value="`+v+`"`) {
			t.Errorf("%v: the form lost the address", tt.values)
		}
		if v := tt.values.Get("events"); v != "" && !strings.Contains(body, `value="`+v+`" checked`) {
			t.Errorf("%v: the form lost the events ticked", tt.values)
		}
	}
	// Hand-made posts refused on a field no form shows: the reason is
	// shown above the forms.
	for _, v := range []url.Values{{"channel": {"pigeon"}}, {"channel": {"email"}, "address": {"a@example.com"}, "url": {"http://127.0.0.1:9/h"}}} {
		resp, body := e.form("/notifications", e.writeTk, v)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `class="flash"`) {
			t.Errorf("%v = %d, want 422 with the reason shown\n%s", v, resp.StatusCode, body)
		}
	}
	good := url.Values{"channel": {"email"}, "address": {"a@example.com"}}
	if resp, _ := e.form("/notifications", e.writeTk, good, "Sec-Fetch-Site", "cross-site"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site post = %d, want 403", resp.StatusCode)
	}
	if resp, _ := e.form("/notifications", e.readTok, good); resp.StatusCode != http.StatusForbidden {
		t.Errorf("post with a read token = %d, want 403", resp.StatusCode)
	}
	if n := e.subscriptionCount(); n != 0 {
		t.Fatalf("refused forms wrote %d subscriptions", n)
	}
	if _, body := e.get("/notifications", e.readTok); strings.Contains(body, `id="add-webhook"`) {
		t.Error("a read token is offered the add form")
	}
}
