package main

import (
	"fmt"
	"io"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// optionFlags are the flags of a page's regions and keyword rules, shared by
// add and set. Each is repeatable; on set, a flag given replaces its list,
// and given only as an empty value (--within "") it empties the list.
type optionFlags struct {
	Within      []string `sep:"none" placeholder:"SELECTOR" help:"Count only links inside elements this CSS selector matches, e.g. '#latest-news' (repeatable; an empty value clears it on set)."`
	Exclude     []string `sep:"none" placeholder:"SELECTOR" help:"Never count links inside elements this CSS selector matches, e.g. 'nav', 'footer' (repeatable; an empty value clears it on set)."`
	IncludeText []string `name:"include-text" sep:"none" placeholder:"REGEXP" help:"Keep only links whose text or teaser matches one of these (RE2, case ignored; repeatable; an empty value clears it on set)."`
	ExcludeText []string `name:"exclude-text" sep:"none" placeholder:"REGEXP" help:"Drop links whose text or teaser matches this (RE2, case ignored; repeatable; an empty value clears it on set)."`
	IncludeURL  []string `name:"include-url" sep:"none" placeholder:"REGEXP" help:"Keep only links whose URL matches one of these (RE2; repeatable; an empty value clears it on set)."`
	ExcludeURL  []string `name:"exclude-url" sep:"none" placeholder:"REGEXP" help:"Drop links whose URL matches this (RE2; repeatable; an empty value clears it on set)."`
}

// options returns the lists as a new page's options, empty entries dropped.
func (f optionFlags) options() watch.LinkOptions {
	return watch.LinkOptions{Within: nonEmpty(f.Within), Exclude: nonEmpty(f.Exclude),
		IncludeText: nonEmpty(f.IncludeText), ExcludeText: nonEmpty(f.ExcludeText),
		IncludeURL: nonEmpty(f.IncludeURL), ExcludeURL: nonEmpty(f.ExcludeURL)}
}

// edit sets in e the lists whose flags were given.
func (f optionFlags) edit(e *watch.PageEdit) {
	for _, l := range []struct {
		given []string
		dst   **[]string
	}{{f.Within, &e.Within}, {f.Exclude, &e.Exclude}, {f.IncludeText, &e.IncludeText},
		{f.ExcludeText, &e.ExcludeText}, {f.IncludeURL, &e.IncludeURL}, {f.ExcludeURL, &e.ExcludeURL}} {
		if len(l.given) > 0 {
			list := nonEmpty(l.given)
			*l.dst = &list
		}
	}
}

// nonEmpty drops empty entries: an empty value is how a person says "none".
func nonEmpty(l []string) []string {
	out := make([]string, 0, len(l))
	for _, s := range l {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// printOptions prints the page's regions and keyword rules, one line, when it
// has any.
func printOptions(w io.Writer, p watch.Page) {
	o := p.Options
	if len(o.Within)+len(o.Exclude)+len(o.IncludeText)+len(o.ExcludeText)+len(o.IncludeURL)+len(o.ExcludeURL) == 0 {
		return
	}
	fmt.Fprintf(w, "page %d: within %q, exclude %q, include-text %q, exclude-text %q, include-url %q, exclude-url %q\n",
		p.ID, o.Within, o.Exclude, o.IncludeText, o.ExcludeText, o.IncludeURL, o.ExcludeURL)
}
