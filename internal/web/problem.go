package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// problemDetails is an RFC 9457 problem; Errors lists the fields or rows
// that were refused.
type problemDetails struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Errors   []fieldError `json:"errors,omitempty"`
}

// fieldError names what was refused: a field ("url", "interval", …) or a
// row of an import.
type fieldError struct {
	Field  string `json:"field,omitempty"`
	Row    int    `json:"row,omitempty"`
	Detail string `json:"detail"`
}

// problem answers with an RFC 9457 problem of type about:blank: the title is
// the status's phrase, detail says what was wrong and what to do. A request
// of the web page gets the same words on a page of the site instead.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, status int, detail string, errs ...fieldError) {
	if isPageRequest(r) {
		s.errorPage(w, r, status, sentence(detail))
		return
	}
	writeProblem(w, r, problemDetails{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Errors: errs})
}

// sentence capitalises detail and ends it with a full stop, as a page's
// text; problem details keep the API's lower-case phrases.
func sentence(detail string) string {
	if detail == "" {
		return detail
	}
	r, n := utf8.DecodeRuneInString(detail)
	detail = string(unicode.ToUpper(r)) + detail[n:]
	if !strings.HasSuffix(detail, ".") {
		detail += "."
	}
	return detail
}

func writeProblem(w http.ResponseWriter, r *http.Request, p problemDetails) {
	p.Instance = r.URL.Path
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// fail answers a request that could not be carried out for a reason that is
// not the client's (the database is down, say), and logs it once.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil {
		s.log.Warn("request over its time budget", "method", r.Method, "path", r.URL.Path, "err", err)
		s.problem(w, r, http.StatusServiceUnavailable, "the request took longer than this server gives it; "+
			"narrow it (a page, a tag, a time range, a longer search word) or try again")
		return
	}
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	s.problem(w, r, http.StatusInternalServerError, "the request could not be carried out; the server's log says why")
}

// badRowsInDetail is how many bad rows of an import the detail of its
// problem names; its errors name every one.
const badRowsInDetail = 10

// writeError answers err from a page write or read with the status it
// deserves: 404, 409, 422 (with the refused field), 503 for a name lookup
// that failed (a retry may work), 500 for the rest.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var bad *pagefile.BadRowsError
	switch {
	case errors.Is(err, watch.ErrPageNotFound), errors.Is(err, watch.ErrArticleNotFound):
		s.problem(w, r, http.StatusNotFound, err.Error())
	case errors.Is(err, watch.ErrDuplicatePage):
		s.problem(w, r, http.StatusConflict, err.Error())
	case watch.RefusalsOf(err) != nil:
		// Every refusal, so that a client mends them all at once.
		refusals := watch.RefusalsOf(err)
		errs := make([]fieldError, len(refusals))
		for i, refused := range refusals {
			errs[i] = fieldError{Field: refused.Field, Detail: refused.Error()}
		}
		s.problem(w, r, http.StatusUnprocessableEntity, refusals.Error(), errs...)
	case errors.As(err, &bad):
		errs := make([]fieldError, len(bad.Rows))
		for i, row := range bad.Rows {
			errs[i] = fieldError{Row: row.Line, Detail: row.Err.Error()}
		}
		// errors names every row; the detail, the first few.
		s.problem(w, r, http.StatusUnprocessableEntity, bad.Summary(badRowsInDetail), errs...)
	case watch.FetchKindOf(err) == watch.FetchDNS || watch.FetchKindOf(err) == watch.FetchTimeout:
		s.problem(w, r, http.StatusServiceUnavailable, err.Error()+"; try again")
	default:
		s.fail(w, r, err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
