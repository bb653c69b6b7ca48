package store

import (
	"fmt"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// optionColumns are the pages columns of a page's regions and keyword rules,
// in the order optionArgs gives their values.
const optionColumns = `within_selectors, exclude_selectors, include_text, exclude_text, include_url, exclude_url`

// optionArgs returns the values of optionColumns for o; an empty list is
// stored as '{}', never NULL.
func optionArgs(o watch.LinkOptions) []any {
	return []any{nonNil(o.Within), nonNil(o.Exclude), nonNil(o.IncludeText), nonNil(o.ExcludeText),
		nonNil(o.IncludeURL), nonNil(o.ExcludeURL)}
}

// optionEditArgs returns the values of optionColumns that e changes, nil
// for a list e leaves alone (the statement keeps the column with coalesce).
func optionEditArgs(e watch.PageEdit) []any {
	lists := []*[]string{e.Within, e.Exclude, e.IncludeText, e.ExcludeText, e.IncludeURL, e.ExcludeURL}
	out := make([]any, len(lists))
	for i, l := range lists {
		if l != nil {
			out[i] = nonNil(*l)
		} else {
			out[i] = []string(nil)
		}
	}
	return out
}

// admitsChanged is an SQL condition, for an UPDATE of pages whose SET
// expressions read the old row, true when the new values change what the
// page's checks admit. params names the statement's parameters holding
// same_site_only, ignore_patterns and then optionColumns, in that order;
// a NULL parameter keeps its column. Such a change marks the page for a
// silent re-baseline (pages.rebaseline): the links the new options admit
// are the page as it was, not news.
func admitsChanged(params ...int) string {
	cols := append([]string{"same_site_only", "ignore_patterns"}, strings.Split(optionColumns, ", ")...)
	conds := make([]string, len(cols))
	for i, c := range cols {
		conds[i] = fmt.Sprintf("coalesce($%d, %s) IS DISTINCT FROM %s", params[i], c, c)
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// jobOptions returns the options a job carries: nil when o filters nothing,
// so a job for a page without options stays as small as before, and empty
// lists dropped so the JSON omits them.
func jobOptions(o watch.LinkOptions) *watch.LinkOptions {
	lists := []*[]string{&o.Ignore, &o.Within, &o.Exclude, &o.IncludeText, &o.ExcludeText, &o.IncludeURL, &o.ExcludeURL}
	empty := !o.SameSiteOnly
	for _, l := range lists {
		if len(*l) == 0 {
			*l = nil
		} else {
			empty = false
		}
	}
	if empty {
		return nil
	}
	return &o
}
