package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// feedLink is one feed of the feeds page, in its three formats.
type feedLink struct {
	Title string
	// Atom, RSS and JSON are absolute URLs, with ?token= when the page was
	// just given a token to put in them.
	Atom, RSS, JSON string
}

type feedsView struct {
	view
	Feeds []feedLink
	// Created is the read token just made; its secret is in the URLs above
	// and shown this once.
	Created *watch.Token
	Secret  string
	// TokenName is the name form's value; NameError its refusal.
	TokenName, NameError string
	PublicRead           bool
}

// feedLinks lists the feed of every page and of each tag, with token in
// their URLs when it is not empty.
func (s *Server) feedLinks(r *http.Request, tags []string, token string) []feedLink {
	base := s.baseURL(r)
	link := func(title, path string) feedLink {
		q := ""
		if token != "" {
			q = "?" + url.Values{"token": {token}}.Encode()
		}
		return feedLink{Title: title, Atom: base + path + ".atom" + q, RSS: base + path + ".rss" + q, JSON: base + path + ".json" + q}
	}
	out := []feedLink{link("Every page", "/feeds/all")}
	for _, t := range tags {
		out = append(out, link("Tag "+t, "/feeds/tags/"+url.PathEscape(t)))
	}
	return out
}

func (s *Server) uiFeeds(w http.ResponseWriter, r *http.Request) {
	s.showFeeds(w, r, http.StatusOK, feedsView{TokenName: defaultFeedTokenName(time.Now())})
}

func (s *Server) showFeeds(w http.ResponseWriter, r *http.Request, status int, v feedsView) {
	tags, err := s.deps.Pages.Tags(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.view, v.PublicRead = s.viewOf(r, "Feeds", "feeds"), s.cfg.PublicRead
	v.Feeds = s.feedLinks(r, tags, v.Secret)
	s.render(w, r, status, "feeds", v)
}

// defaultFeedTokenName names a feed reader's token by the minute it was
// made, so that two made one after the other do not collide.
func defaultFeedTokenName(now time.Time) string {
	return "feeds-" + now.UTC().Format("20060102-1504")
}

// uiCreateFeedToken makes a read token for feed readers and shows the feed
// URLs with it, once: only its hash is kept. Read tokens open feeds, the
// API's reads and the page, never a change nor the subscriptions.
func (s *Server) uiCreateFeedToken(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	err := watch.CheckTokenName(name)
	secret := watch.NewTokenSecret()
	var tok watch.Token
	if err == nil {
		tok, err = s.deps.Tokens.CreateToken(r.Context(), name, secret, false)
	}
	switch {
	case errors.Is(err, watch.ErrDuplicateToken):
		s.showFeeds(w, r, http.StatusUnprocessableEntity, feedsView{TokenName: name,
			NameError: fmt.Sprintf("a token named %q exists; choose another name", name)})
	case watch.RefusalsOf(err) != nil:
		s.showFeeds(w, r, http.StatusUnprocessableEntity, feedsView{TokenName: name, NameError: err.Error()})
	case err != nil:
		s.fail(w, r, err)
	default:
		s.showFeeds(w, r, http.StatusOK, feedsView{Created: &tok, Secret: secret, TokenName: defaultFeedTokenName(time.Now())})
	}
}
