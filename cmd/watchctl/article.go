package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// articleCmd prints one stored article and its sightings: the updates that
// link it, on whichever pages.
type articleCmd struct {
	ID   string `arg:"" name:"id" help:"The article's id: an update's article.id (see watchctl updates --json)."`
	JSON bool   `name:"json" help:"The API's object (GET /api/v1/articles/{id}): the article with its body, and its sightings."`
}

func (a *articleCmd) Run(c *cli) error {
	id, err := strconv.ParseInt(a.ID, 10, 64)
	if err != nil || id <= 0 {
		return usagef("%q is not an article id: want a positive whole number (an update's article.id)", a.ID)
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	as, err := st.Article(c.ctx, id)
	if errors.Is(err, watch.ErrArticleNotFound) {
		return usagef("no article has id %d", id)
	}
	if err != nil {
		return err
	}
	if a.JSON {
		as.FetchedAt = as.FetchedAt.UTC()
		for i, u := range as.Sightings {
			as.Sightings[i] = u.Published()
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(as)
	}
	w := c.stdout
	fmt.Fprintf(w, "article %d: %s\n", as.ID, as.URL)
	fmt.Fprintf(w, "status: %s", as.Status)
	if as.Detail != "" {
		fmt.Fprintf(w, " (%s)", as.Detail)
	}
	fmt.Fprintf(w, ", fetched %s\n", as.FetchedAt.Local().Format("2006-01-02 15:04:05"))
	for _, f := range []struct{ name, value string }{
		{"headline", as.Headline}, {"published", as.DatePublished}, {"modified", as.DateModified},
		{"authors", strings.Join(as.Author, ", ")}, {"language", as.InLanguage}, {"section", as.Section},
		{"lead", as.Description},
	} {
		if f.value != "" {
			fmt.Fprintf(w, "%s: %s\n", f.name, strings.Join(strings.Fields(f.value), " "))
		}
	}
	if as.Body != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(as.Body))
	}
	fmt.Fprintf(w, "\nseen %d %s:\n", len(as.Sightings), plural(len(as.Sightings), "time", "times"))
	tw := newTable(w)
	fmt.Fprintln(tw, "DISCOVERED\tPAGE\tTEXT\tURL")
	for _, u := range as.Sightings {
		fmt.Fprintf(tw, "%s\t%d %s\t%s\t%s\n", u.DiscoveredAt.Local().Format("2006-01-02 15:04:05"), u.PageID, oneLine(u.PageName),
			oneLine(u.Text), u.URL)
	}
	return tw.Flush()
}
