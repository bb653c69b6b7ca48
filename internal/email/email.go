package email

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// DefaultTimeout bounds one SMTP session, from the dial to the end of
// the message.
const DefaultTimeout = 30 * time.Second

// Config configures an Sender.
type Config struct {
	// URL is the SMTP server: smtp://user:password@host:port (STARTTLS
	// when the server offers it; port 587 by default) or smtps:// (TLS
	// from the first byte; port 465 by default). User and password are
	// optional; with them the client authenticates with the best mechanism
	// the server offers, sending a password in clear (PLAIN, LOGIN) only
	// over TLS or to a relay on loopback. Empty: no e-mail; the programs
	// then fail e-mail deliveries until it is set.
	URL string `env:"PORTALWATCH_SMTP_URL"`
	// From is the sender's address, such as portalwatch <watch@example.com>;
	// required with URL.
	From string `env:"PORTALWATCH_SMTP_FROM"`
	// Timeout bounds one SMTP session, at least 100ms; zero means
	// DefaultTimeout.
	Timeout time.Duration `env:"PORTALWATCH_SMTP_TIMEOUT"`
}

// Validate checks the settings New would refuse, naming every
// bad field; its errors never show the URL's password.
func (c Config) Validate() error {
	errs := []error{config.AtLeast("Timeout", c.Timeout, 100*time.Millisecond)}
	if c.URL != "" {
		errs = append(errs, config.URL("URL", c.URL, "smtp", "smtps"))
		if c.From == "" {
			errs = append(errs, config.Invalid("From", c.From, "set the sender address of e-mail, such as portalwatch <watch@example.com>"))
		}
	}
	if c.From != "" {
		if _, err := mail.ParseAddress(c.From); err != nil {
			errs = append(errs, config.Invalid("From", c.From, fmt.Sprintf("not an e-mail address (%v)", err)))
		}
	}
	return errors.Join(errs...)
}

// Sender sends updates as multipart text and HTML e-mail, grouped by
// page, with a List-Unsubscribe header. It opens one SMTP session per
// message and is safe for concurrent use. Errors never show the SMTP
// password.
type Sender struct {
	cfg  Config
	opts []gomail.Option
	host string
}

// New checks cfg and returns a sender. It does not connect.
func New(cfg Config) (*Sender, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Hostname() == "" {
		// The URL holds a password: never echo it.
		return nil, errors.New("SMTP URL: want smtp://user:password@host:port or smtps://…")
	}
	if _, err := mail.ParseAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("sender address %q: %w", cfg.From, err)
	}
	opts := []gomail.Option{gomail.WithTimeout(cfg.Timeout)}
	port := 587
	switch u.Scheme {
	case "smtp":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case "smtps":
		port = 465
		opts = append(opts, gomail.WithSSL())
	default:
		return nil, fmt.Errorf("SMTP URL %s: want the scheme smtp or smtps", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("SMTP URL %s: bad port %q", u.Redacted(), p)
		}
	}
	opts = append(opts, gomail.WithPort(port))
	if user := u.User.Username(); user != "" {
		pass, _ := u.User.Password()
		// The best mechanism the server offers; over a connection without
		// TLS go-mail offers no mechanism that sends the password in clear,
		// except PLAIN to a relay on this machine (a local postfix).
		auth := gomail.SMTPAuthAutoDiscover
		if h := u.Hostname(); h == "localhost" || h == "127.0.0.1" || h == "::1" {
			auth = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(user), gomail.WithPassword(pass))
	}
	return &Sender{cfg: cfg, opts: opts, host: u.Hostname()}, nil
}

// Send mails batch b to sub's address: for each page, its updates' texts
// and links, each with the headline, date, authors and lead of its
// article when that was read, then its events, each on a line that says
// what happened (a message of one event says it in its subject too). A
// message of type watch.TypeTest says only that the subscription works. A permanent refusal of the recipient (5xx to RCPT TO) counts as
// gone and pauses the subscription.
func (e *Sender) Send(ctx context.Context, sub watch.Subscription, typ string, b watch.Batch) watch.SendResult {
	m, err := e.message(sub, typ, b)
	if err != nil {
		return watch.SendResult{Err: err}
	}
	client, err := gomail.NewClient(e.host, e.opts...)
	if err != nil {
		return watch.SendResult{Err: fmt.Errorf("SMTP client for %s: %w", e.host, err)}
	}
	if err := client.DialAndSendWithContext(ctx, m); err != nil {
		res := watch.SendResult{Err: fmt.Errorf("SMTP %s: %s", e.host, watch.ErrorLine(err.Error()))}
		var se *gomail.SendError
		if errors.As(err, &se) {
			res.Code = se.ErrorCode()
			res.Gone = se.Reason == gomail.ErrSMTPRcptTo && !se.IsTemp()
		}
		return res
	}
	return watch.SendResult{Code: 250}
}

// pageGroup is one page's updates in a mail.
type pageGroup struct {
	Page    watch.NotifiedPage
	Updates []mailUpdate
}

// mailUpdate is one link of a mail with what its article adds.
type mailUpdate struct {
	watch.Update
	Story story
}

// story is what a mail shows of an update's article under its link, each
// field on one line; all empty when the article was not read as one.
type story struct {
	// Headline is the article's, left out when it says what the link text
	// says already.
	Headline string
	// Byline is "Published <when> by <authors>", or either half.
	Byline string
	// Lead is the article's description, cut at MaxLeadRunes.
	Lead string
}

// MaxLeadRunes is the most characters of an article's lead a mail shows:
// a description that runs longer (some sites put the first paragraphs
// there) is cut at a word, with an ellipsis.
const MaxLeadRunes = 300

// storyOf returns what the mail shows of u's article: its headline, date,
// authors and lead when its status is ok, nothing otherwise (still
// pending, or no article behind the link).
func storyOf(u watch.Update) story {
	a := u.Article
	if a == nil || a.Status != watch.ArticleOK {
		return story{}
	}
	var st story
	// Crawled text may hold line breaks, which would break the plain
	// text part's layout of one field a line.
	if h := oneLine(a.Headline); !strings.EqualFold(h, oneLine(u.Text)) {
		st.Headline = h
	}
	var parts []string
	if t, ok := a.Published(); ok {
		layout := "2 January 2006 15:04 UTC"
		if len(a.DatePublished) == len("2006-01-02") {
			layout = "2 January 2006" // a day alone: no time to show
		}
		parts = append(parts, "Published "+t.UTC().Format(layout))
	}
	var authors []string
	for _, name := range a.Author {
		if name = oneLine(name); name != "" {
			authors = append(authors, name)
		}
	}
	if len(authors) > 0 {
		by := "by " + strings.Join(authors, ", ")
		if len(parts) == 0 {
			by = "By " + strings.Join(authors, ", ")
		}
		parts = append(parts, by)
	}
	st.Byline = strings.Join(parts, " ")
	st.Lead = cut(oneLine(a.Description), MaxLeadRunes)
	return st
}

// oneLine squeezes every run of white space in s into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut returns s, or its first n characters cut back to the last space
// among them, with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := string(r[:n])
	if i := strings.LastIndex(head, " "); i > len(head)/2 {
		head = head[:i]
	}
	return strings.TrimRight(head, " ,;:.") + "…"
}

// mailEvent is one event of a mail: its page, what happened in a line,
// and the link it is about (link.rewritten).
type mailEvent struct {
	Page watch.NotifiedPage
	Says string
	When string
	URL  string
}

// eventOf returns what a mail says of e.
func eventOf(e watch.Event, page watch.NotifiedPage) mailEvent {
	me := mailEvent{Page: page, When: e.At.UTC().Format("2 January 2006 15:04 UTC")}
	switch e.Kind {
	case watch.LinkRewritten:
		me.Says = fmt.Sprintf("headline rewritten from “%s” to “%s”", oneLine(e.OldText), oneLine(e.NewText))
		me.URL = e.URL
	case watch.PageDegraded:
		me.Says = "the watch may be blind to the page (" + e.Reason.Words() + ")"
		if d := oneLine(e.Detail); d != "" {
			me.Says += ": " + d
		}
	case watch.PageRecovered:
		me.Says = "the page is seen again: a healthy check ended its degraded run"
	default:
		me.Says = string(e.Kind)
	}
	return me
}

// eventSubject is the subject of a message of one event alone.
func eventSubject(e watch.Event, page watch.NotifiedPage) string {
	switch e.Kind {
	case watch.LinkRewritten:
		return fmt.Sprintf("portalwatch: headline rewritten on %s: %s", pageTitle(page), cut(oneLine(e.NewText), 80))
	case watch.PageDegraded:
		return fmt.Sprintf("portalwatch: %s may be out of sight (%s)", pageTitle(page), e.Reason.Words())
	case watch.PageRecovered:
		return fmt.Sprintf("portalwatch: %s is in sight again", pageTitle(page))
	}
	return fmt.Sprintf("portalwatch: %s on %s", e.Kind, pageTitle(page))
}

type mailData struct {
	Test         bool
	Groups       []pageGroup
	Events       []mailEvent
	Count        int
	Subscription int64
	Scope        string
}

func (e *Sender) message(sub watch.Subscription, typ string, b watch.Batch) (*gomail.Msg, error) {
	data := mailData{Test: typ == watch.TypeTest, Count: len(b.Updates), Subscription: sub.ID, Scope: sub.Scope()}
	for _, ev := range b.Events {
		data.Events = append(data.Events, eventOf(ev, b.Pages[ev.PageID]))
	}
	for _, u := range b.Updates {
		i := slices.IndexFunc(data.Groups, func(g pageGroup) bool { return g.Page.ID == u.PageID })
		if i < 0 {
			data.Groups = append(data.Groups, pageGroup{Page: b.Pages[u.PageID]})
			i = len(data.Groups) - 1
		}
		data.Groups[i].Updates = append(data.Groups[i].Updates, mailUpdate{Update: u, Story: storyOf(u)})
	}
	var text, html bytes.Buffer
	if err := textMail.Execute(&text, data); err != nil {
		return nil, fmt.Errorf("render e-mail: %w", err)
	}
	if err := htmlMail.Execute(&html, data); err != nil {
		return nil, fmt.Errorf("render e-mail: %w", err)
	}
	m := gomail.NewMsg()
	if err := m.From(e.cfg.From); err != nil {
		return nil, fmt.Errorf("sender %q: %w", e.cfg.From, err)
	}
	if err := m.To(sub.Target); err != nil {
		return nil, fmt.Errorf("recipient %q: %w", sub.Target, err)
	}
	var events string
	if n := len(b.Events); n > 0 {
		events = fmt.Sprintf(", %d %s", n, plural(n, "event", "events"))
	}
	switch {
	case data.Test:
		m.Subject("portalwatch: test message")
	case len(b.Updates) == 0 && len(b.Events) == 1:
		m.Subject(eventSubject(b.Events[0], b.Pages[b.Events[0].PageID]))
	case len(b.Updates) == 0:
		m.Subject(fmt.Sprintf("portalwatch: %d events", len(b.Events)))
	case len(data.Groups) == 1:
		m.Subject(fmt.Sprintf("portalwatch: %d new on %s%s", data.Count, pageTitle(data.Groups[0].Page), events))
	default:
		m.Subject(fmt.Sprintf("portalwatch: %d new on %d pages%s", data.Count, len(data.Groups), events))
	}
	// Mail clients show an unsubscribe button for this header; the
	// request reaches the sender's mailbox, whose operator runs
	// `watchctl notify remove`.
	from, _ := mail.ParseAddress(e.cfg.From)
	m.SetGenHeader(gomail.HeaderListUnsubscribe, fmt.Sprintf("<mailto:%s?subject=%s>", from.Address,
		url.PathEscape(fmt.Sprintf("unsubscribe %d", sub.ID))))
	m.SetGenHeader(gomail.HeaderXMailer, "portalwatch")
	m.SetMessageIDWithValue(fmt.Sprintf("%s@portalwatch", b.ID))
	m.SetDate()
	m.SetBodyString(gomail.TypeTextPlain, text.String())
	m.AddAlternativeString(gomail.TypeTextHTML, html.String())
	return m, nil
}

func pageTitle(p watch.NotifiedPage) string {
	if p.Name != "" {
		return p.Name
	}
	return p.URL
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

var funcs = map[string]any{"title": pageTitle}

var textMail = texttemplate.Must(texttemplate.New("text").Funcs(funcs).Parse(
	`{{if .Test}}This is a test message: subscription {{.Subscription}} ({{.Scope}}) reaches you.
{{else}}{{range .Groups}}{{title .Page}} ({{.Page.URL}})
{{range .Updates}}  - {{.Text}}
    {{.URL}}
{{with .Story}}{{with .Headline}}    {{.}}
{{end}}{{with .Byline}}    {{.}}
{{end}}{{with .Lead}}    {{.}}
{{end}}{{end}}{{end}}
{{end}}{{with .Events}}Events
{{range .}}  - {{title .Page}}: {{.Says}}
    {{.When}}{{with .URL}}, {{.}}{{end}}
{{end}}{{end}}{{end}}
--
portalwatch subscription {{.Subscription}} ({{.Scope}}). To stop these messages, ask the operator to run
watchctl notify remove {{.Subscription}}, or use your mail program's unsubscribe button.
`))

// htmlMail is the HTML part. It must stay html/template: link texts and page
// names came from crawled pages, and it escapes each one for where it goes,
// so a mail client shows a text such as <img onerror=…> rather than running it.
var htmlMail = htmltemplate.Must(htmltemplate.New("html").Funcs(funcs).Parse(
	`<!doctype html><html><body>
{{if .Test}}<p>This is a test message: subscription {{.Subscription}} ({{.Scope}}) reaches you.</p>
{{else}}{{range .Groups}}<h2><a href="{{.Page.URL}}">{{title .Page}}</a></h2>
<ul>{{range .Updates}}<li><a href="{{.URL}}">{{if .Text}}{{.Text}}{{else}}{{.URL}}{{end}}</a>
{{- with .Story}}{{with .Headline}}<p style="margin:0.2em 0"><strong>{{.}}</strong></p>{{end}}
{{- with .Byline}}<p style="margin:0.2em 0;color:#666">{{.}}</p>{{end}}
{{- with .Lead}}<p style="margin:0.2em 0">{{.}}</p>{{end}}{{end}}</li>{{end}}</ul>
{{end}}{{with .Events}}<h2>Events</h2>
<ul>{{range .}}<li><a href="{{.Page.URL}}">{{title .Page}}</a>: {{.Says}}
<p style="margin:0.2em 0;color:#666">{{.When}}{{with .URL}}, <a href="{{.}}">{{.}}</a>{{end}}</p></li>{{end}}</ul>
{{end}}{{end}}<hr><p style="color:#666">portalwatch subscription {{.Subscription}} ({{.Scope}}).
To stop these messages, ask the operator to run <code>watchctl notify remove {{.Subscription}}</code>,
or use your mail program's unsubscribe button.</p>
</body></html>
`))
