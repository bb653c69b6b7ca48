package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// sendersTester sends test messages through real senders, as cmd/web's.
type sendersTester map[watch.Channel]notifier.Sender

func (t sendersTester) SendTest(ctx context.Context, sub watch.Subscription, sample watch.Batch) watch.SendResult {
	return notifier.SendTest(ctx, t, sub, sample)
}

// webhookTester has a webhook sender that may dial loopback (the tests'
// receivers) and no e-mail sender, as a server without PORTALWATCH_SMTP_URL.
func webhookTester() TestSender {
	return sendersTester{watch.Webhook: webhook.New(webhook.Config{})}
}

// receiver is a loopback webhook receiver that keeps what it was sent.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []receivedHook
}

type receivedHook struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, receivedHook{r.Header.Clone(), body})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() []receivedHook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receivedHook(nil), rc.reqs...)
}

func (e *env) subscriptionCount() int {
	e.t.Helper()
	subs, err := e.st.Subscriptions(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return len(subs)
}

// addPage registers a page through the API and returns its id.
func (e *env) addPage(url string) int64 {
	e.t.Helper()
	resp, b := e.do("POST", "/api/v1/pages", e.writeTk, fmt.Sprintf(`{"url":%q,"tags":["ministry"]}`, url))
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("add page %s: %d %s", url, resp.StatusCode, b)
	}
	return decode[pageJSON](e.t, b).ID
}

func TestSubscriptionLifecycle(t *testing.T) {
	e := newEnv(t)
	page := e.addPage("http://127.0.0.1:9/news")
	rc := newReceiver(t, http.StatusNoContent)

	resp, b := e.do("POST", "/api/v1/subscriptions", e.writeTk, fmt.Sprintf(`{"channel":"webhook","url":%q,"page_id":%d}`, rc.URL+"/hook?k=1", page))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", resp.StatusCode, b)
	}
	hook := decode[createdSubscriptionJSON](t, b)
	// The receiver's query (a token, often) is never shown again.
	if !strings.HasPrefix(hook.Secret, watch.SecretPrefix) || hook.Target != rc.URL+"/hook?k=xxxxx" || hook.PageID != page ||
		hook.Digest != watch.DigestNone || resp.Header.Get("Location") != fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID) {
		t.Fatalf("created webhook = %+v, Location %q", hook, resp.Header.Get("Location"))
	}

	if hook.WaitArticle != "0s" || hook.WaitArticleSeconds != 0 || hook.Events == nil || len(hook.Events) != 0 {
		t.Fatalf("created webhook waits %q (%vs) for articles, events %v; want 0s and []", hook.WaitArticle, hook.WaitArticleSeconds, hook.Events)
	}

	resp, b = e.do("POST", "/api/v1/subscriptions", e.writeTk, `{"channel":"email","address":"Desk <desk@example.com>","digest":"hourly","tag":"ministry","wait_article":"90s",
		"events":["page.recovered","page.degraded"]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create e-mail: %d %s", resp.StatusCode, b)
	}
	mail := decode[createdSubscriptionJSON](t, b)
	if mail.Secret != "" || mail.Target != "desk@example.com" || mail.Tag != "ministry" || mail.Digest != watch.DigestHourly ||
		mail.WaitArticle != "1m30s" || mail.WaitArticleSeconds != 90 || fmt.Sprint(mail.Events) != "[page.degraded page.recovered]" {
		t.Fatalf("created e-mail = %+v", mail)
	}
	// PATCH changes the events, and only them; an unknown kind is refused
	// with what would do, and changes nothing.
	resp, b = e.do("PATCH", fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID), e.writeTk, `{"events":["link.rewritten"]}`)
	if resp.StatusCode != http.StatusOK || fmt.Sprint(decode[subscriptionJSON](t, b).Events) != "[link.rewritten]" {
		t.Fatalf("patch events: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID), e.writeTk, `{"events":["link.rewriten"]}`)
	if p := decode[problemDetails](t, b); resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "events" ||
		!strings.Contains(p.Detail, `"link.rewriten" is not a kind of event: want link.rewritten`) {
		t.Fatalf("patch an unknown kind: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID), `{"digest":"daily"}`, http.StatusBadRequest},
		{"/api/v1/subscriptions/999999", `{"events":[]}`, http.StatusNotFound},
	} {
		if resp, b := e.do("PATCH", c.path, e.writeTk, c.body); resp.StatusCode != c.want {
			t.Errorf("PATCH %s %s = %d %s, want %d", c.path, c.body, resp.StatusCode, b, c.want)
		}
	}
	if sub, err := e.st.Subscription(context.Background(), hook.ID); err != nil || fmt.Sprint(sub.Events) != "[link.rewritten]" {
		t.Fatalf("stored webhook %+v, %v; want its events [link.rewritten]", sub, err)
	}
	resp, b = e.do("PATCH", fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID), e.writeTk, `{"events":[]}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"events":[]`) {
		t.Fatalf("patch no events: %d %s", resp.StatusCode, b)
	}
	if sub, err := e.st.Subscription(context.Background(), mail.ID); err != nil || sub.WaitArticle != 90*time.Second {
		t.Fatalf("stored e-mail subscription %+v, %v; want its wait of 90s", sub, err)
	}

	// The notifier's record, as the store writes it: a failure that
	// paused the webhook.
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `INSERT INTO deliveries (subscription_id, message_id, update_count, first_update_id, last_update_id,
		status, attempts, response_code, last_error) VALUES ($1, 'msg_1', 3, 1, 3, 'paused', 7, 500, 'receiver answered 500')`, hook.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE subscriptions SET paused_at = now(), paused_reason = 'failing since yesterday' WHERE id = $1`, hook.ID); err != nil {
		t.Fatal(err)
	}

	_, b = e.do("GET", "/api/v1/subscriptions", e.writeTk, "")
	list := decode[struct{ Subscriptions []subscriptionJSON }](t, b).Subscriptions
	if len(list) != 2 || list[0].ID != hook.ID || list[1].ID != mail.ID {
		t.Fatalf("list = %s", b)
	}
	if strings.Contains(string(b), hook.Secret) {
		t.Fatal("the list shows the signing secret")
	}
	got := list[0]
	if !got.Paused || got.PausedReason != "failing since yesterday" || got.LastDelivery == nil ||
		got.LastDelivery.Status != watch.Paused || got.LastDelivery.Attempts != 7 || got.LastDelivery.ResponseCode != 500 ||
		got.LastDelivery.LastError != "receiver answered 500" {
		t.Fatalf("paused webhook = %+v (last %+v)", got, got.LastDelivery)
	}
	if list[1].LastDelivery != nil || list[1].Paused {
		t.Fatalf("fresh e-mail subscription = %+v", list[1])
	}

	_, b = e.do("GET", fmt.Sprintf("/api/v1/subscriptions/%d/deliveries?limit=5", hook.ID), e.writeTk, "")
	if log := decode[struct{ Deliveries []deliveryJSON }](t, b).Deliveries; len(log) != 1 || log[0].MessageID != "msg_1" || log[0].UpdateCount != 3 {
		t.Fatalf("deliveries = %s", b)
	}

	// The test message is signed with the secret the creation showed.
	resp, b = e.do("POST", fmt.Sprintf("/api/v1/subscriptions/%d/test", hook.ID), e.writeTk, "")
	if resp.StatusCode != http.StatusOK || decode[testResultJSON](t, b) != (testResultJSON{Delivered: true, ResponseCode: 204}) {
		t.Fatalf("test webhook: %d %s", resp.StatusCode, b)
	}
	hooks := rc.received()
	if len(hooks) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(hooks))
	}
	h := hooks[0]
	ts, _ := strconv.ParseInt(h.header.Get("webhook-timestamp"), 10, 64)
	want, err := webhook.Sign(hook.Secret, h.header.Get("webhook-id"), ts, h.body)
	if err != nil || h.header.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q (%v)", h.header.Get("webhook-signature"), want, err)
	}
	// A test message shows the fields a real one has, for the
	// subscription's own page, and says it is a sample.
	var body webhook.Body
	if err := json.Unmarshal(h.body, &body); err != nil || body.Type != watch.TypeTest || body.Page.ID != page ||
		body.Page.Name != "127.0.0.1:9" || len(body.Updates) != 1 || body.Updates[0].PageID != page ||
		!strings.Contains(body.Updates[0].Text, "Test message") {
		t.Errorf("test message body %s (%v): want a marked sample of page %d", h.body, err, page)
	}
	// No SMTP sender: the far side is not reached, and the answer says so.
	resp, b = e.do("POST", fmt.Sprintf("/api/v1/subscriptions/%d/test", mail.ID), e.writeTk, "")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "PORTALWATCH_SMTP_URL") {
		t.Fatalf("test e-mail without SMTP: %d %s", resp.StatusCode, b)
	}

	if resp, b = e.do("POST", fmt.Sprintf("/api/v1/subscriptions/%d/resume", hook.ID), e.writeTk, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resume: %d %s", resp.StatusCode, b)
	}
	sub, err := e.st.Subscription(ctx, hook.ID)
	if err != nil || !sub.PausedAt.IsZero() || sub.PausedReason != "" {
		t.Fatalf("after resume: %+v %v", sub, err)
	}

	if resp, b = e.do("DELETE", fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID), e.writeTk, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	if n := e.subscriptionCount(); n != 1 {
		t.Fatalf("%d subscriptions after delete, want 1", n)
	}
	for _, tt := range []struct{ method, path string }{
		{"DELETE", fmt.Sprintf("/api/v1/subscriptions/%d", hook.ID)},
		{"POST", fmt.Sprintf("/api/v1/subscriptions/%d/resume", hook.ID)},
		{"POST", fmt.Sprintf("/api/v1/subscriptions/%d/test", hook.ID)},
		{"GET", fmt.Sprintf("/api/v1/subscriptions/%d/deliveries", hook.ID)},
		{"DELETE", "/api/v1/subscriptions/x"},
		{"POST", "/api/v1/subscriptions/0/test"},
	} {
		if resp, b := e.do(tt.method, tt.path, e.writeTk, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s = %d %s, want 404", tt.method, tt.path, resp.StatusCode, b)
		}
	}
}

func TestSubscriptionAccess(t *testing.T) {
	e := newEnv(t)
	body := `{"channel":"email","address":"desk@example.com"}`
	for _, tt := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/api/v1/subscriptions", "", "", 401},
		{"GET", "/api/v1/subscriptions", e.readTok, "", 403},
		{"GET", "/api/v1/subscriptions", e.writeTk, "", 200},
		{"GET", "/api/v1/subscriptions/1/deliveries", e.readTok, "", 403},
		{"POST", "/api/v1/subscriptions", "", body, 401},
		{"POST", "/api/v1/subscriptions", e.readTok, body, 403},
		{"DELETE", "/api/v1/subscriptions/1", e.readTok, "", 403},
		{"POST", "/api/v1/subscriptions/1/test", e.readTok, "", 403},
		{"POST", "/api/v1/subscriptions/1/resume", e.readTok, "", 403},
		{"GET", "/api/v1/subscriptions/1/deliveries", "", "", 401},
	} {
		if resp, b := e.do(tt.method, tt.path, tt.token, tt.body); resp.StatusCode != tt.want {
			t.Errorf("%s %s with %q = %d %s, want %d", tt.method, tt.path, tt.token, resp.StatusCode, b, tt.want)
		}
	}
	if n := e.subscriptionCount(); n != 0 {
		t.Fatalf("refused requests wrote %d subscriptions", n)
	}
	pub := e.serve(e.st, publicRead)
	// Webhook URLs often carry a receiver's token: public reads do not show them.
	if resp, b := e.doAt(pub, "GET", "/api/v1/subscriptions", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("public read without a token: %d %s, want 401", resp.StatusCode, b)
	}
}

func TestCreateSubscriptionRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	page := e.addPage("http://127.0.0.1:9/news")
	for _, tt := range []struct {
		body  string
		want  int
		field string
	}{
		{`{"channel":"sms","address":"desk@example.com"}`, 422, "channel"},
		{`{"address":"desk@example.com"}`, 422, "channel"},
		{`{"channel":"webhook"}`, 422, "url"},
		{`{"channel":"webhook","url":"ftp://example.com/x"}`, 422, "url"},
		{`{"channel":"webhook","url":"not a url"}`, 422, "url"},
		{`{"channel":"webhook","url":"http://127.0.0.1:9/h","digest":"daily"}`, 422, "digest"},
		{`{"channel":"webhook","url":"http://127.0.0.1:9/h","address":"a@example.com"}`, 422, "address"},
		{`{"channel":"email","address":"nobody"}`, 422, "address"},
		{`{"channel":"email","address":""}`, 422, "address"},
		{`{"channel":"email","address":"a@example.com","url":"http://127.0.0.1:9/h"}`, 422, "url"},
		{`{"channel":"email","address":"a@example.com","digest":"weekly"}`, 422, "digest"},
		{`{"channel":"email","address":"a@example.com","page_id":0}`, 422, "page_id"},
		{fmt.Sprintf(`{"channel":"email","address":"a@example.com","page_id":%d}`, page+1000), 422, "page_id"},
		{fmt.Sprintf(`{"channel":"email","address":"a@example.com","page_id":%d,"tag":"x"}`, page), 422, "tag"},
		{`{"channel":"email","address":"a@example.com","tag":"two words"}`, 422, "tag"},
		{`{"channel":"email","address":"a@example.com","tag":""}`, 422, "tag"},
		{`{"channel":"email","address":"a@example.com","wait_article":"11m"}`, 422, "wait_article"},
		{`{"channel":"webhook","url":"http://127.0.0.1:9/h","wait_article":"soon"}`, 422, "wait_article"},
		{`{"channel":"email","address":"a@example.com","events":["page.degraded","page.gone"]}`, 422, "events"},
		{`{"channel":"webhook","url":"http://127.0.0.1:9/h","events":["updates.created"]}`, 422, "events"},
		{`{"channel":"email","address":"a@example.com","events":"page.degraded"}`, 400, ""},
		{`{"channel":"email","address":"a@example.com","wait_article":30}`, 400, ""},
		{`{"channel":"email","address":"a@example.com","secret":"whsec_x"}`, 400, ""},
		{`{"channel":"email","address":"a@example.com","page_id":"1"}`, 400, ""},
		{`[]`, 400, ""},
		{`{"channel":"email","address":"a@example.com"} {}`, 400, ""},
	} {
		resp, b := e.do("POST", "/api/v1/subscriptions", e.writeTk, tt.body)
		if resp.StatusCode != tt.want {
			t.Errorf("%s = %d %s, want %d", tt.body, resp.StatusCode, b, tt.want)
			continue
		}
		if tt.field != "" {
			p := decode[problemDetails](t, b)
			if len(p.Errors) != 1 || p.Errors[0].Field != tt.field || p.Detail == "" {
				t.Errorf("%s: problem %s, want field %q", tt.body, b, tt.field)
			}
		}
	}
	if resp, b := e.do("POST", "/api/v1/subscriptions", e.writeTk, "channel=email", "Content-Type", "application/x-www-form-urlencoded"); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("form body = %d %s, want 415", resp.StatusCode, b)
	}
	if resp, b := e.do("GET", "/api/v1/subscriptions/1/deliveries?limit=101", e.writeTk, ""); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=101 = %d %s, want 400", resp.StatusCode, b)
	}
	if n := e.subscriptionCount(); n != 0 {
		t.Fatalf("bad requests wrote %d subscriptions", n)
	}
}

// TestWebhookURLGuard: with private addresses not allowed, a webhook URL
// that names a loopback address, or a name that resolves to one, is
// refused as `watchctl notify add webhook` refuses it.
func TestWebhookURLGuard(t *testing.T) {
	e := newEnv(t)
	guarded := e.serve(e.st, func(c *Config) { c.Policy = registration.Policy{GuardURL: fetch.Guard(false, nil)} })
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]/hook", "http://10.0.0.1/hook"} {
		resp, b := e.doAt(guarded, "POST", "/api/v1/subscriptions", e.writeTk, fmt.Sprintf(`{"channel":"webhook","url":%q}`, u))
		p := decode[problemDetails](t, b)
		if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "url" {
			t.Errorf("%s = %d %s, want 422 on url", u, resp.StatusCode, b)
		}
	}
	if n := e.subscriptionCount(); n != 0 {
		t.Fatalf("refused webhooks wrote %d subscriptions", n)
	}
}
