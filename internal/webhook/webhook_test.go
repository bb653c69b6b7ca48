package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

func verify(secret string, h http.Header, body []byte) bool {
	return webhook.Verify(secret, h, body, time.Now()) == nil
}

func batch() watch.Batch {
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	return watch.Batch{
		ID:    "msg_1_800_0",
		Pages: map[int64]watch.NotifiedPage{7: {ID: 7, URL: "https://ministry.example/", Name: "Ministry"}},
		Updates: []watch.Update{
			{ID: 11, PageID: 7, URL: "https://ministry.example/a?x=1&y=2", Text: "A <b>", Code: "c1", DiscoveredAt: at},
			{ID: 12, PageID: 7, URL: "https://ministry.example/b", Text: "B", Code: "c2", DiscoveredAt: at},
		},
	}
}

func TestSignMatchesStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	// The example of the Standard Webhooks specification's reference
	// libraries.
	got, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		[]byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	if _, err := webhook.Sign("not-a-secret", "id", 1, nil); err == nil {
		t.Fatal("a secret without whsec_ was accepted")
	}
}

func TestWebhookSendsSignedBodyWithStableID(t *testing.T) {
	t.Parallel()
	secret := watch.NewWebhookSecret()
	type seen struct {
		id   string
		ok   bool
		body webhook.Body
	}
	got := make(chan seen, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b webhook.Body
		json.Unmarshal(body, &b)
		got <- seen{r.Header.Get("webhook-id"), verify(secret, r.Header, body), b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w := webhook.New(webhook.Config{})
	sub := watch.Subscription{ID: 1, Channel: watch.Webhook, Target: srv.URL, Secret: secret}
	for range 2 {
		if res := w.Send(context.Background(), sub, watch.TypeUpdatesCreated, batch()); res.Err != nil || res.Code != 204 {
			t.Fatalf("send: %+v", res)
		}
	}
	first, second := <-got, <-got
	if !first.ok || !second.ok {
		t.Fatal("a signature did not verify")
	}
	if first.id != "msg_1_800_0" || second.id != first.id {
		t.Fatalf("webhook-ids %q, %q: want the batch id both times", first.id, second.id)
	}
	b := first.body
	if b.Type != "updates.created" || b.Page.Name != "Ministry" || len(b.Updates) != 2 || b.Updates[0].Text != "A <b>" ||
		b.Updates[0].URL != "https://ministry.example/a?x=1&y=2" {
		t.Fatalf("body %+v", b)
	}
}

func TestWebhookFailuresAreBoundedAndExplained(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) })
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { t.Error("a redirect was followed") })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-block })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(block) // before Close, which waits for the slow handler
	w := webhook.New(webhook.Config{Timeout: 300 * time.Millisecond})
	send := func(path string) watch.SendResult {
		return w.Send(context.Background(), watch.Subscription{ID: 1, Target: srv.URL + path, Secret: watch.NewWebhookSecret()}, watch.TypeUpdatesCreated, batch())
	}
	if res := send("/redirect"); res.Code != 302 || res.Err == nil || !strings.Contains(res.Err.Error(), "not followed") {
		t.Errorf("redirect: %+v", res)
	}
	if res := send("/huge"); res.Code != 500 || res.Err == nil || len(res.Err.Error()) > webhook.MaxResponseBytes+20 {
		t.Errorf("huge 500: code %d, error of %d bytes", res.Code, len(res.Err.Error()))
	}
	if res := send("/gone"); !res.Gone {
		t.Errorf("410: %+v, want Gone", res)
	}
	start := time.Now()
	if res := send("/slow"); res.Err == nil || !strings.HasPrefix(res.Err.Error(), "no response in 300ms: ") || time.Since(start) > 5*time.Second {
		t.Errorf("slow receiver: %+v after %s, want %q", res, time.Since(start), "no response in 300ms: …")
	}
}

// TestWebhookSlowBodies: a 2xx is a delivery the moment its status comes,
// however its body drips, and Send returns soon after; a failure's body is
// read only within the timeout. Issue 26: a dripped 200 held the sender for
// the whole timeout, which the notifier's record deadline did not survive.
func TestWebhookSlowBodies(t *testing.T) {
	t.Parallel()
	quit := make(chan struct{})
	drip := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			for {
				if _, err := w.Write([]byte(".")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-time.After(50 * time.Millisecond):
				case <-r.Context().Done():
					return
				case <-quit:
					return
				}
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/drip-200", drip(http.StatusOK))
	mux.Handle("/drip-500", drip(http.StatusInternalServerError))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(quit) // before Close, which waits for the handlers
	const timeout = 2 * time.Second
	w := webhook.New(webhook.Config{Timeout: timeout})
	send := func(path string) (watch.SendResult, time.Duration) {
		start := time.Now()
		res := w.Send(context.Background(), watch.Subscription{ID: 1, Target: srv.URL + path, Secret: watch.NewWebhookSecret()}, watch.TypeUpdatesCreated, batch())
		return res, time.Since(start)
	}
	if res, took := send("/drip-200"); res.Err != nil || res.Code != 200 || took > timeout/2 {
		t.Errorf("200 with a dripped body: %+v after %s, want delivered at once", res, took)
	}
	res, took := send("/drip-500")
	if res.Err == nil || res.Code != 500 || !strings.Contains(res.Err.Error(), "reading the response") || took > timeout+time.Second {
		t.Errorf("500 with a dripped body: %+v after %s, want a failure within %s", res, took, timeout)
	}
}

func TestWebhookRefusesPrivateAddressesAtDial(t *testing.T) {
	t.Parallel()
	hit := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit = true }))
	defer srv.Close()
	w := webhook.New(webhook.Config{DialControl: fetch.DialGuard(false)})
	// "localhost" passes no registration check here: only the dial guard
	// stands between the request and the loopback receiver.
	target := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	res := w.Send(context.Background(), watch.Subscription{ID: 1, Target: target, Secret: watch.NewWebhookSecret()}, watch.TypeUpdatesCreated, batch())
	if res.Err == nil || !strings.Contains(res.Err.Error(), "loopback") || hit {
		t.Fatalf("send to loopback: %+v, receiver hit %v", res, hit)
	}
}

// TestBodyMatchesTheOpenAPISchema holds a sent body against openapi.json's
// WebhookBody, whose updates are the API's Update: one definition of an
// update as it leaves portalwatch, for the API and receivers alike.
func TestBodyMatchesTheOpenAPISchema(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../web/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["WebhookBody"]
	if schema == nil {
		t.Fatal("openapi.json has no WebhookBody schema")
	}
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- body
	}))
	defer srv.Close()
	b := batch()
	b.Updates[1].Burst, b.Updates[1].Summary = true, "A teaser"
	sub := watch.Subscription{ID: 1, Channel: watch.Webhook, Target: srv.URL, Secret: watch.NewWebhookSecret()}
	if res := webhook.New(webhook.Config{}).Send(context.Background(), sub, watch.TypeUpdatesCreated, b); res.Err != nil {
		t.Fatal(res.Err)
	}
	raw := <-bodies
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := schema.Value.VisitJSON(v); err != nil {
		t.Errorf("body does not match WebhookBody: %v\n%s", err, raw)
	}
	var got webhook.Body
	json.Unmarshal(raw, &got)
	if got.Version != webhook.BodyVersion || got.Updates[1].PageName != "Ministry" || !got.Updates[1].Burst || got.Updates[1].PageID != 7 {
		t.Errorf("body %s: want version %d, each update with its page's name and its burst flag", raw, webhook.BodyVersion)
	}
}

// TestBodyCarriesTheArticle holds the body of a message whose updates have
// articles to its exact form: each update's article beside its other
// fields, status pending while the extractor has not read it, no body.
// Fields are added to version 1, never renamed: the golden text below may
// grow, but none of its names may change.
func TestBodyCarriesTheArticle(t *testing.T) {
	t.Parallel()
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- body
	}))
	defer srv.Close()
	b := batch()
	// Read from the database in the notifier's zone; sent in UTC.
	fetched := time.Date(2026, 11, 30, 9, 0, 5, 0, time.FixedZone("CET", 3600))
	b.Updates[0].Article = &watch.Article{ID: 3, Status: watch.ArticleOK, URL: "https://ministry.example/a",
		Headline: "Fees cut", Description: "The lead.", DatePublished: "2026-11-30T07:55:00Z",
		Author: []string{"A. Writer"}, InLanguage: "en", Sources: map[string]string{"headline": "json-ld"}, FetchedAt: fetched}
	b.Updates[1].Article = &watch.Article{Status: watch.ArticlePending, URL: "https://ministry.example/b"}
	sub := watch.Subscription{ID: 1, Channel: watch.Webhook, Target: srv.URL, Secret: watch.NewWebhookSecret()}
	if res := webhook.New(webhook.Config{}).Send(context.Background(), sub, watch.TypeUpdatesCreated, b); res.Err != nil {
		t.Fatal(res.Err)
	}
	const want = `{"version":1,"type":"updates.created","page":{"id":7,"url":"https://ministry.example/","name":"Ministry"},` +
		`"updates":[{"id":11,"page_id":7,"page_name":"Ministry","url":"https://ministry.example/a?x=1&y=2","text":"A <b>",` +
		`"code":"c1","discovered_at":"2026-11-30T08:00:00Z","summary":"","burst":false,` +
		`"article":{"id":3,"status":"ok","url":"https://ministry.example/a","headline":"Fees cut","description":"The lead.",` +
		`"date_published":"2026-11-30T07:55:00Z","author":["A. Writer"],"in_language":"en","sources":{"headline":"json-ld"},` +
		`"fetched_at":"2026-11-30T08:00:05Z"},"source":"homepage"},` +
		`{"id":12,"page_id":7,"page_name":"Ministry","url":"https://ministry.example/b","text":"B","code":"c2",` +
		`"discovered_at":"2026-11-30T08:00:00Z","summary":"","burst":false,` +
		`"article":{"id":0,"status":"pending","url":"https://ministry.example/b"},"source":"homepage"}]}`
	if got := string(<-bodies); got != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
}

// TestEventBodies holds the body of each kind of event message to its
// exact form, in the shape of the updates body: its type the kind, the
// page, and the event with the fields of its kind only. Each must match
// openapi.json's WebhookBody too.
func TestEventBodies(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../web/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["WebhookBody"]
	secret := watch.NewWebhookSecret()
	type received struct {
		id   string
		ok   bool
		body []byte
	}
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Get("webhook-id"), verify(secret, r.Header, body), body}
	}))
	defer srv.Close()
	// Read from the database in the notifier's zone; sent in UTC.
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	page := `"page":{"id":7,"url":"https://ministry.example/","name":"Ministry"}`
	for _, c := range []struct {
		event watch.Event
		want  string
	}{
		{watch.Event{ID: 21, PageID: 7, Kind: watch.LinkRewritten, At: at, URL: "https://ministry.example/a",
			OldText: "Fees <up>", NewText: "Fees cut"},
			`{"version":1,"type":"link.rewritten",` + page + `,"event":{"id":21,"page_id":7,"kind":"link.rewritten",` +
				`"at":"2026-11-30T08:00:00Z","url":"https://ministry.example/a","old_text":"Fees <up>","new_text":"Fees cut"}}`},
		{watch.Event{ID: 22, PageID: 7, Kind: watch.PageDegraded, At: at, Reason: watch.Blocked, Detail: "the page answered 403 Forbidden"},
			`{"version":1,"type":"page.degraded",` + page + `,"event":{"id":22,"page_id":7,"kind":"page.degraded",` +
				`"at":"2026-11-30T08:00:00Z","reason":"blocked","detail":"the page answered 403 Forbidden"}}`},
		{watch.Event{ID: 23, PageID: 7, Kind: watch.PageRecovered, At: at},
			`{"version":1,"type":"page.recovered",` + page + `,"event":{"id":23,"page_id":7,"kind":"page.recovered",` +
				`"at":"2026-11-30T08:00:00Z"}}`},
	} {
		b := watch.Batch{ID: "msg_1_900_0", Events: []watch.Event{c.event},
			Pages: map[int64]watch.NotifiedPage{7: {ID: 7, URL: "https://ministry.example/", Name: "Ministry"}}}
		sub := watch.Subscription{ID: 1, Channel: watch.Webhook, Target: srv.URL, Secret: secret}
		if res := webhook.New(webhook.Config{}).Send(context.Background(), sub, b.Type(), b); res.Err != nil {
			t.Fatal(res.Err)
		}
		r := <-got
		if !r.ok || r.id != b.ID {
			t.Errorf("%s: webhook-id %q, signature verified %v", c.event.Kind, r.id, r.ok)
		}
		if string(r.body) != c.want {
			t.Errorf("body\n%s\nwant\n%s", r.body, c.want)
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.Value.VisitJSON(v); err != nil {
			t.Errorf("%s body does not match WebhookBody: %v", c.event.Kind, err)
		}
	}
}
