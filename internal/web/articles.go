package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// contentFull is the value of ?content= that has updates and feed entries
// carry their articles' bodies, which lists leave out otherwise: a body is
// up to watch.MaxArticleBody bytes, a list holds up to a thousand.
const contentFull = "full"

// apiArticle answers one article with every update that links it: where
// and when each portal showed the story. Reading it needs what reading
// updates needs.
func (s *Server) apiArticle(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not an article id: ids are positive whole numbers (an update's article.id)", r.PathValue("id")))
		return
	}
	a, err := s.deps.Updates.Article(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a.FetchedAt = a.FetchedAt.UTC()
	for i, u := range a.Sightings {
		a.Sightings[i] = u.Published()
	}
	if a.Sightings == nil {
		a.Sightings = []watch.Update{}
	}
	writeJSON(w, http.StatusOK, a)
}
