package email_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"golang.org/x/net/html"

	"github.com/portalwatch/portalwatch/internal/email"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// smtpServer is an SMTP server in the test process that keeps what it is
// sent; it accepts PLAIN login only as user "desk", password "s3cret", and
// refuses the mailbox "gone@example.com" permanently.
type smtpServer struct {
	addr string
	mu   sync.Mutex
	got  []received
}

type received struct {
	from, to string
	data     []byte
}

func startSMTP(t *testing.T) *smtpServer {
	t.Helper()
	s := &smtpServer{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{srv: s}, nil }))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return s
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

type smtpSession struct {
	srv      *smtpServer
	authed   bool
	from, to string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "desk" || pass != "s3cret" {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if to == "gone@example.com" {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	s.to = to
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	s.srv.got = append(s.srv.got, received{s.from, s.to, b})
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }

func TestEmailIsMultipartGroupedByPageWithUnsubscribe(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	e, err := email.New(email.Config{URL: "smtp://desk:s3cret@" + srv.addr, From: "portalwatch <watch@example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	b := batch()
	b.Pages[9] = watch.NotifiedPage{ID: 9, URL: "https://news.example/"}
	b.Updates = append(b.Updates, watch.Update{ID: 13, PageID: 9, URL: "https://news.example/story", Text: "Story & more", DiscoveredAt: time.Now()})
	sub := watch.Subscription{ID: 4, Channel: watch.Email, Target: "desk@example.com", Digest: watch.DigestHourly}
	if res := e.Send(context.Background(), sub, watch.TypeUpdatesCreated, b); res.Err != nil {
		t.Fatalf("send: %+v", res)
	}
	got := srv.messages()
	if len(got) != 1 || got[0].to != "desk@example.com" || got[0].from != "watch@example.com" {
		t.Fatalf("server received %+v", got)
	}
	header, parts := mailParts(t, got[0].data)
	if u := header.Get("List-Unsubscribe"); !strings.Contains(u, "mailto:watch@example.com") || !strings.Contains(u, "unsubscribe%204") {
		t.Errorf("List-Unsubscribe %q", u)
	}
	if s := header.Get("Subject"); !strings.Contains(s, "3 new on 2 pages") {
		t.Errorf("subject %q", s)
	}
	text, htmlPart := parts["text/plain"], parts["text/html"]
	if !strings.Contains(text, "Ministry (https://ministry.example/)") || !strings.Contains(text, "https://news.example/story") ||
		strings.Index(text, "Ministry") > strings.Index(text, "news.example") {
		t.Errorf("text part, want updates grouped by page in order:\n%s", text)
	}
	if !strings.Contains(htmlPart, `<a href="https://news.example/story">Story &amp; more</a>`) || !strings.Contains(htmlPart, "A &lt;b&gt;") {
		t.Errorf("html part, want escaped text:\n%s", htmlPart)
	}
}

// mailParts reads a multipart/alternative message and returns its header
// and its parts' decoded bodies by media type.
func mailParts(t *testing.T, data []byte) (mail.Header, map[string]string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("content type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	parts := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read message part: %v", err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("read message part: %v", err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		parts[ct] = decodeQP(t, p.Header.Get("Content-Transfer-Encoding"), body)
	}
	return msg.Header, parts
}

// TestEmailHTMLShowsCrawledTextAsText sends link texts and a page name that
// hold markup, parses the HTML part as a mail client does and finds only
// the template's own elements, each update's text shown as it was.
func TestEmailHTMLShowsCrawledTextAsText(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	e, err := email.New(email.Config{URL: "smtp://desk:s3cret@" + srv.addr, From: "watch@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	payloads := []string{
		`<img src=x onerror=alert(1)>`,
		`&lt;img src=x onerror=alert(2)&gt;`,
		`&amp;lt;img src=x onerror=alert(3)&amp;gt;`,
		`<script>alert(4)</script>`,
		`]]><img src=x onerror=alert(5)>`,
		`<b>bold</b><iframe src="https://evil.example/"></iframe>`,
	}
	pageName := `<script>alert("page")</script>Ministry`
	b := watch.Batch{ID: "msg_markup", Pages: map[int64]watch.NotifiedPage{7: {ID: 7, URL: "https://ministry.example/", Name: pageName}}}
	for i, s := range payloads {
		b.Updates = append(b.Updates, watch.Update{ID: int64(i + 1), PageID: 7, URL: fmt.Sprintf("https://ministry.example/%d", i), Text: s, DiscoveredAt: time.Now()})
	}
	sub := watch.Subscription{ID: 4, Channel: watch.Email, Target: "desk@example.com"}
	if res := e.Send(context.Background(), sub, watch.TypeUpdatesCreated, b); res.Err != nil {
		t.Fatalf("send: %+v", res)
	}
	got := srv.messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	_, parts := mailParts(t, got[0].data)
	doc, err := html.Parse(strings.NewReader(parts["text/html"]))
	if err != nil {
		t.Fatalf("parse the HTML part: %v", err)
	}
	// The elements the template writes; anything else came from the text.
	ours := map[string]bool{"html": true, "head": true, "body": true, "h2": true, "a": true, "ul": true, "li": true, "hr": true, "p": true, "code": true}
	var links, foreign []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if !ours[n.Data] {
				el := "<" + n.Data
				for _, a := range n.Attr {
					el += fmt.Sprintf(" %s=%q", a.Key, a.Val)
				}
				foreign = append(foreign, el+">")
			}
			if n.Data == "a" {
				links = append(links, textOf(n))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(foreign) > 0 {
		t.Errorf("the HTML part holds elements the page wrote: %s\n%s", strings.Join(foreign, ", "), parts["text/html"])
	}
	want := append([]string{pageName}, payloads...)
	if !slices.Equal(links, want) {
		t.Errorf("links show %q, want the page's name and texts as they were: %q", links, want)
	}
}

// textOf returns the text a mail client shows for n.
func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var s strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		s.WriteString(textOf(c))
	}
	return s.String()
}

func decodeQP(t *testing.T, enc string, body []byte) string {
	t.Helper()
	if !strings.EqualFold(enc, "quoted-printable") {
		return string(body)
	}
	// mime/quotedprintable via a reader.
	r := qpReader(string(body))
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEmailFailuresSayWhyWithoutThePassword(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	send := func(url, to string) watch.SendResult {
		e, err := email.New(email.Config{URL: url, From: "watch@example.com", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return e.Send(context.Background(), watch.Subscription{ID: 1, Target: to}, watch.TypeTest, watch.Batch{ID: "msg_test"})
	}
	res := send("smtp://desk:wrong-password@"+srv.addr, "desk@example.com")
	if res.Err == nil || strings.Contains(res.Err.Error(), "wrong-password") {
		t.Errorf("bad login: %+v", res)
	}
	if res := send("smtp://desk:s3cret@"+srv.addr, "gone@example.com"); !res.Gone || res.Code != 550 {
		t.Errorf("unknown mailbox: %+v, want Gone with 550", res)
	}
	if _, err := email.New(email.Config{URL: "http://desk:pw@host", From: "a@b.c"}); err == nil || strings.Contains(err.Error(), "pw@") {
		t.Errorf("http URL: %v", err)
	}
}

func qpReader(s string) io.Reader { return quotedprintable.NewReader(strings.NewReader(s)) }

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

// TestEmailShowsTheArticleUnderItsLink: an update whose article was read
// shows its headline (unless the link text says it already), its date and
// authors and its lead under the link, in both parts; one still pending
// shows its link alone. Crawled markup in those fields stays text.
func TestEmailShowsTheArticleUnderItsLink(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	e, err := email.New(email.Config{URL: "smtp://desk:s3cret@" + srv.addr, From: "watch@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	b := batch()
	b.Updates[0].Text = "Fees"
	b.Updates[0].Article = &watch.Article{Status: watch.ArticleOK, URL: "https://ministry.example/a",
		Headline: "Ministry cuts the\nfees <script>alert(1)</script>", Description: "The lead, with <b>markup</b>.",
		DatePublished: "2026-11-30T08:55:00+01:00", Author: []string{"A. Writer", " ", "B. <i>Other</i>"}}
	b.Updates[1].Article = &watch.Article{Status: watch.ArticleOK, URL: "https://ministry.example/b",
		Headline: " b ", Description: strings.Repeat("word ", 100), DatePublished: "2026-11-29"}
	b.Updates = append(b.Updates, watch.Update{ID: 13, PageID: 7, URL: "https://ministry.example/c", Text: "C",
		DiscoveredAt: b.Updates[0].DiscoveredAt, Article: &watch.Article{Status: watch.ArticlePending, URL: "https://ministry.example/c"}},
		watch.Update{ID: 14, PageID: 7, URL: "https://ministry.example/d", Text: "D",
			DiscoveredAt: b.Updates[0].DiscoveredAt, Article: &watch.Article{Status: watch.ArticlePaywall, Headline: "Locked"}})
	sub := watch.Subscription{ID: 4, Channel: watch.Email, Target: "desk@example.com"}
	if res := e.Send(context.Background(), sub, watch.TypeUpdatesCreated, b); res.Err != nil {
		t.Fatalf("send: %+v", res)
	}
	got := srv.messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	_, parts := mailParts(t, got[0].data)
	text := strings.ReplaceAll(parts["text/plain"], "\r\n", "\n")
	lead := strings.TrimSpace(strings.Repeat("word ", 60)) + "…"
	want := "Ministry (https://ministry.example/)\n" +
		"  - Fees\n    https://ministry.example/a?x=1&y=2\n" +
		"    Ministry cuts the fees <script>alert(1)</script>\n" +
		"    Published 30 November 2026 07:55 UTC by A. Writer, B. <i>Other</i>\n" +
		"    The lead, with <b>markup</b>.\n" +
		"  - B\n    https://ministry.example/b\n" +
		"    Published 29 November 2026\n" +
		"    " + lead + "\n" +
		"  - C\n    https://ministry.example/c\n" +
		"  - D\n    https://ministry.example/d\n"
	if !strings.HasPrefix(text, want) {
		t.Errorf("text part\n%s\nwant it to start\n%s", text, want)
	}
	doc, err := html.Parse(strings.NewReader(parts["text/html"]))
	if err != nil {
		t.Fatalf("parse the HTML part: %v", err)
	}
	var items []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "b", "i":
				t.Errorf("the HTML part holds a <%s> of the article's", n.Data)
			case "li":
				items = append(items, textOf(n))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	wantItems := []string{
		"FeesMinistry cuts the fees <script>alert(1)</script>Published 30 November 2026 07:55 UTC by A. Writer, B. <i>Other</i>The lead, with <b>markup</b>.",
		"BPublished 29 November 2026" + lead,
		"C",
		"D",
	}
	if !slices.Equal(items, wantItems) {
		t.Errorf("HTML items\n%q\nwant\n%q", items, wantItems)
	}
}

// TestEmailSaysEachEvent sends each kind of event alone, as a message
// without a digest does, and then with updates in a digest: each subject
// and text says what happened, and a digest lists its events in a section
// of their own after the updates.
func TestEmailSaysEachEvent(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	e, err := email.New(email.Config{URL: "smtp://desk:s3cret@" + srv.addr, From: "watch@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	events := []watch.Event{
		{ID: 21, PageID: 7, Kind: watch.LinkRewritten, At: at, URL: "https://ministry.example/a", OldText: "Fees up", NewText: "Fees <cut>"},
		{ID: 22, PageID: 7, Kind: watch.PageDegraded, At: at, Reason: watch.Blocked, Detail: "the page answered 403 Forbidden"},
		{ID: 23, PageID: 7, Kind: watch.PageRecovered, At: at},
	}
	want := []struct{ subject, text string }{
		{"portalwatch: headline rewritten on Ministry: Fees <cut>", "Ministry: headline rewritten from “Fees up” to “Fees <cut>”\n    30 November 2026 08:00 UTC, https://ministry.example/a"},
		{"portalwatch: Ministry may be out of sight (blocked)", "Ministry: the watch may be blind to the page (blocked): the page answered 403 Forbidden"},
		{"portalwatch: Ministry is in sight again", "Ministry: the page is seen again"},
	}
	sub := watch.Subscription{ID: 4, Channel: watch.Email, Target: "desk@example.com", Digest: watch.DigestNone}
	for i, ev := range events {
		b := watch.Batch{ID: fmt.Sprintf("msg_4_900_%d", i), Events: []watch.Event{ev}, Pages: batch().Pages}
		if res := e.Send(context.Background(), sub, b.Type(), b); res.Err != nil {
			t.Fatalf("send %s: %+v", ev.Kind, res)
		}
	}
	got := srv.messages()
	if len(got) != len(events) {
		t.Fatalf("server received %d messages, want %d", len(got), len(events))
	}
	for i, w := range want {
		header, parts := mailParts(t, got[i].data)
		if s := decodeSubject(t, header.Get("Subject")); s != w.subject {
			t.Errorf("%s: subject %q, want %q", events[i].Kind, s, w.subject)
		}
		if !strings.Contains(strings.ReplaceAll(parts["text/plain"], "\r\n", "\n"), w.text) {
			t.Errorf("%s: text part, want %q:\n%s", events[i].Kind, w.text, parts["text/plain"])
		}
		if !strings.Contains(parts["text/html"], "<h2>Events</h2>") || strings.Contains(parts["text/html"], "<cut>") {
			t.Errorf("%s: html part, want an events section with texts escaped:\n%s", events[i].Kind, parts["text/html"])
		}
	}

	sub.Digest = watch.DigestDaily
	digest := batch()
	digest.ID, digest.Events = "msg_4_901_0", events[1:]
	if res := e.Send(context.Background(), sub, digest.Type(), digest); res.Err != nil {
		t.Fatalf("send digest: %+v", res)
	}
	header, parts := mailParts(t, srv.messages()[len(events)].data)
	if s := decodeSubject(t, header.Get("Subject")); s != "portalwatch: 2 new on Ministry, 2 events" {
		t.Errorf("digest subject %q", s)
	}
	text := strings.ReplaceAll(parts["text/plain"], "\r\n", "\n")
	if u, ev := strings.Index(text, "https://ministry.example/b"), strings.Index(text, "\nEvents\n"); u < 0 || ev < u ||
		!strings.Contains(text[ev:], "blind to the page") || !strings.Contains(text[ev:], "seen again") {
		t.Errorf("digest text, want its updates, then its events:\n%s", text)
	}
}

// decodeSubject reads a header that may be MIME-encoded.
func decodeSubject(t *testing.T, s string) string {
	t.Helper()
	d, err := new(mime.WordDecoder).DecodeHeader(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
