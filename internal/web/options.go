package web

import "github.com/portalwatch/portalwatch/internal/watch"

// pageOptionsJSON are a page's regions and keyword rules as the API shows
// and takes them (watch.LinkOptions, in the API's snake_case).
type pageOptionsJSON struct {
	Within      []string `json:"within"`
	Exclude     []string `json:"exclude"`
	IncludeText []string `json:"include_text"`
	ExcludeText []string `json:"exclude_text"`
	IncludeURL  []string `json:"include_url"`
	ExcludeURL  []string `json:"exclude_url"`
}

func toPageOptionsJSON(o watch.LinkOptions) pageOptionsJSON {
	return pageOptionsJSON{Within: nonNil(o.Within), Exclude: nonNil(o.Exclude), IncludeText: nonNil(o.IncludeText),
		ExcludeText: nonNil(o.ExcludeText), IncludeURL: nonNil(o.IncludeURL), ExcludeURL: nonNil(o.ExcludeURL)}
}

func (o pageOptionsJSON) options(sameSite bool, ignore []string) watch.LinkOptions {
	return watch.LinkOptions{SameSiteOnly: sameSite, Ignore: ignore, Within: o.Within, Exclude: o.Exclude,
		IncludeText: o.IncludeText, ExcludeText: o.ExcludeText, IncludeURL: o.IncludeURL, ExcludeURL: o.ExcludeURL}
}

// editOptionsJSON are the lists a page update replaces; an absent field
// stays as it is, [] empties the list.
type editOptionsJSON struct {
	Within      *[]string `json:"within"`
	Exclude     *[]string `json:"exclude"`
	IncludeText *[]string `json:"include_text"`
	ExcludeText *[]string `json:"exclude_text"`
	IncludeURL  *[]string `json:"include_url"`
	ExcludeURL  *[]string `json:"exclude_url"`
}

func (o editOptionsJSON) apply(e *watch.PageEdit) {
	e.Within, e.Exclude, e.IncludeText, e.ExcludeText, e.IncludeURL, e.ExcludeURL =
		o.Within, o.Exclude, o.IncludeText, o.ExcludeText, o.IncludeURL, o.ExcludeURL
}
