package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// subscriptionForm is one of the web page's two add forms (webhook,
// e-mail) as it was sent, and what was wrong with it, by field: url,
// address, digest, page_id, tag, wait_article, events.
type subscriptionForm struct {
	URL, Address, Digest, PageID, Tag, WaitArticle string
	// Events are the kinds of event ticked.
	Events []string
	Errors map[string]string
}

// scopeView is a form's page and tag fields; Prefix keeps their element
// ids apart between the two forms.
type scopeView struct {
	Prefix string
	Form   subscriptionForm
	Pages  []watch.Page
}

// eventChoice is one kind of event's checkbox in an add form.
type eventChoice struct {
	Kind    watch.EventKind
	ID      string
	Label   string
	Checked bool
}

// eventLabels say what each kind of event is, beside its checkbox.
var eventLabels = map[watch.EventKind]string{
	watch.LinkRewritten: "a known link's headline is rewritten",
	watch.PageDegraded:  "the watch may be blind to a page (no links, an empty region, blocked or challenged)",
	watch.PageRecovered: "such a page is seen again",
}

// EventChoices are the form's checkboxes, one per kind, ticked as sent.
func (v scopeView) EventChoices() []eventChoice {
	choices := make([]eventChoice, 0, len(watch.EventKinds))
	for _, k := range watch.EventKinds {
		choices = append(choices, eventChoice{Kind: k, ID: v.Prefix + "-ev-" + strings.ReplaceAll(string(k), ".", "-"),
			Label: eventLabels[k], Checked: slices.Contains(v.Form.Events, string(k))})
	}
	return choices
}

// formFields are the fields each add form shows a refusal beside.
var formFields = map[watch.Channel]map[string]bool{
	watch.Webhook: {"url": true, "digest": true, "page_id": true, "tag": true, "wait_article": true, "events": true},
	watch.Email:   {"address": true, "digest": true, "page_id": true, "tag": true, "wait_article": true, "events": true},
}

type notificationsView struct {
	view
	Subscriptions []watch.SubscriptionStatus
	// Pages fill the forms' page choice.
	Pages          []watch.Page
	Webhook, Email subscriptionForm
	// WebhookScope and EmailScope fill each form's page and tag fields.
	WebhookScope, EmailScope scopeView
	// Created is the subscription just added; its secret is shown this
	// once and never again.
	Created *watch.Subscription
}

func (s *Server) uiNotifications(w http.ResponseWriter, r *http.Request) {
	s.showNotifications(w, r, http.StatusOK, notificationsView{Email: subscriptionForm{Digest: string(watch.DigestNone)}})
}

func (s *Server) showNotifications(w http.ResponseWriter, r *http.Request, status int, v notificationsView) {
	var err error
	if v.Subscriptions, err = s.deps.Subscriptions.Subscriptions(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	if v.Pages, err = s.deps.Pages.Pages(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	v.WebhookScope = scopeView{Prefix: "wh", Form: v.Webhook, Pages: v.Pages}
	v.EmailScope = scopeView{Prefix: "em", Form: v.Email, Pages: v.Pages}
	flash := v.Flash // set by a handler; else the ?done= of a redirect
	v.view = s.viewOf(r, "Notifications", "notifications")
	if flash != "" {
		v.Flash = flash
	}
	s.render(w, r, status, "notifications", v)
}

// uiAddSubscription adds what one of the two forms describes, through the
// API's checks; a refusal shows the form again with the reason beside its
// field, and writes nothing.
func (s *Server) uiAddSubscription(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	form := subscriptionForm{
		URL: strings.TrimSpace(r.PostFormValue("url")), Address: strings.TrimSpace(r.PostFormValue("address")),
		Digest: r.PostFormValue("digest"), PageID: r.PostFormValue("page_id"), Tag: strings.TrimSpace(r.PostFormValue("tag")),
		WaitArticle: strings.TrimSpace(r.PostFormValue("wait_article")), Events: r.PostForm["events"],
	}
	in := subscriptionInput{Channel: r.PostFormValue("channel"), URL: form.URL, Address: form.Address, Digest: form.Digest,
		WaitArticle: form.WaitArticle, Events: form.Events}
	v := notificationsView{Email: subscriptionForm{Digest: string(watch.DigestNone)}}
	var err error
	if form.PageID != "" {
		id, perr := strconv.ParseInt(form.PageID, 10, 64)
		if perr != nil {
			err = refuse("page_id", "%q is not a page id", form.PageID)
		} else {
			in.PageID = &id
		}
	}
	if form.Tag != "" {
		in.Tag = &form.Tag
	}
	var sub watch.Subscription
	if err == nil {
		sub, err = s.addSubscription(r.Context(), in)
	}
	if err == nil {
		v.Created = &sub
		v.Flash = fmt.Sprintf("Subscription %d added", sub.ID)
		s.showNotifications(w, r, http.StatusOK, v)
		return
	}
	field := "url" // a webhook's name that did not resolve now; a retry may work
	if refused := watch.RefusalsOf(err); refused != nil {
		field = refused[0].Field
	} else if kind := watch.FetchKindOf(err); kind != watch.FetchDNS && kind != watch.FetchTimeout {
		s.fail(w, r, err)
		return
	}
	form.Errors = map[string]string{field: err.Error()}
	switch shown := formFields[watch.Channel(in.Channel)]; {
	case !shown[field]:
		// Only a hand-made request is refused on a field its form does
		// not show (no channel, a url for e-mail): the reason shows above
		// the forms.
		v.Flash = err.Error()
	case in.Channel == string(watch.Webhook):
		v.Webhook = form
	default:
		v.Email = form
	}
	s.showNotifications(w, r, http.StatusUnprocessableEntity, v)
}

// uiSubscriptionAction carries out a subscription's buttons: delete, test
// and resume, and says how it went on the page it returns to.
func (s *Server) uiSubscriptionAction(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.pageNotFound(w, r, fmt.Sprintf("%q is not a subscription number.", r.PathValue("id")))
		return
	}
	var done, said string
	switch r.PathValue("action") {
	case "delete":
		err = s.deps.Subscriptions.RemoveSubscription(r.Context(), id)
		done = flashSubRemoved
	case "resume":
		err = s.deps.Subscriptions.ResumeSubscription(r.Context(), id)
		done = flashSubResumed
	case "test":
		// The outcome names the receiver and its answer: shown on the page
		// this request returns, never carried in a redirect's URL.
		var (
			sub watch.Subscription
			res watch.SendResult
		)
		sub, res, err = s.sendTest(r.Context(), id)
		switch {
		case errors.Is(err, errNoTester):
			said, err = err.Error(), nil
		case err != nil:
		case res.Err != nil:
			said = fmt.Sprintf("Test message to %s not delivered: %v", sub.MaskedTarget(), res.Err)
		default:
			said = fmt.Sprintf("Test message delivered to %s (response %d)", sub.MaskedTarget(), res.Code)
		}
	default:
		s.pageNotFound(w, r, fmt.Sprintf("A subscription has no button %q: its buttons test, resume and delete it.", r.PathValue("action")))
		return
	}
	if errors.Is(err, watch.ErrSubscriptionNotFound) {
		s.pageNotFound(w, r, fmt.Sprintf("No subscription %d exists.", id))
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	if said != "" {
		s.showNotifications(w, r, http.StatusOK, notificationsView{view: view{Flash: said}})
		return
	}
	http.Redirect(w, r, flashURL("/notifications", done, id), http.StatusSeeOther)
}
