package article

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/markusmobius/go-htmldate"
	"golang.org/x/net/html"
)

// Date layouts a page may state, tried in order. Those with a zone keep it;
// those without a time give a date.
var (
	zonedLayouts = []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04Z0700",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999 Z07:00",
		"2006-01-02 15:04:05.999999999Z0700",
		"2006-01-02 15:04:05.999999999 -0700",
		"2006-01-02 15:04:05 -0700 MST",
		time.RFC1123Z,
		time.RFC1123,
		"Mon, 2 Jan 2006 15:04:05 -0700",
		"Mon, 2 Jan 2006 15:04:05 MST",
		time.RFC850,
		time.UnixDate,
		"Mon Jan 02 2006 15:04:05 GMT-0700",
	}
	localLayouts = []string{
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02 15:04",
		"2006/01/02 15:04:05",
		"2006/01/02 15:04",
		"January 2, 2006 3:04 PM",
		"January 2, 2006 15:04",
	}
	dateLayouts = []string{
		"2006-01-02",
		"2006/01/02",
		"2006.01.02",
		"20060102",
		"January 2, 2006",
		"Jan 2, 2006",
		"2 January 2006",
		"02.01.2006",
		"Monday, January 2, 2006",
	}
)

// normalizeDate reads s as a date and returns it as RFC 3339 with the
// offset s stated, a local date-time when s states none, or a date when s
// has no time; "" when s is not a plausible date.
func normalizeDate(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return ""
	}
	if t, ok := parseIn(s, zonedLayouts); ok {
		if name, offset := t.Zone(); offset == 0 && name != "UTC" && name != "GMT" {
			// A zone abbreviation Go does not know reads as UTC: keep
			// the wall time and no offset rather than invent one.
			return t.Format("2006-01-02T15:04:05")
		}
		return t.Format(time.RFC3339)
	}
	if t, ok := parseIn(s, localLayouts); ok {
		return t.Format("2006-01-02T15:04:05")
	}
	if t, ok := parseIn(s, dateLayouts); ok {
		return t.Format(time.DateOnly)
	}
	// A date-time whose tail no layout knows ("2024-05-01T09:30:00+0200 CEST",
	// "2024-05-01T09:30:00.000+02:00[Europe/Paris]"): its date at least.
	if m := leadingDate.FindStringSubmatch(s); m != nil {
		if t, ok := parseIn(m[1]+"-"+m[2]+"-"+m[3], dateLayouts[:1]); ok {
			return t.Format(time.DateOnly)
		}
	}
	return ""
}

var leadingDate = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[T ]`)

func parseIn(s string, layouts []string) (time.Time, bool) {
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil && plausible(t) {
			return t, true
		}
	}
	return time.Time{}, false
}

// plausible says whether t could date a web page.
func plausible(t time.Time) bool {
	return t.Year() >= 1990 && t.Year() <= time.Now().Year()+1
}

// URL date patterns: /2024/05/01/, /2024-05-01, 20240501 between non-digits.
var (
	urlDateParts = regexp.MustCompile(`(?:^|[/_-])((?:19|20)\d{2})[/_-](0?[1-9]|1[0-2])[/_-](0?[1-9]|[12]\d|3[01])(?:$|[/_.-])`)
	urlDateRun   = regexp.MustCompile(`(?:^|\D)((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?:$|\D)`)
)

// dateInURL is the date in u's path, "" when it has none.
func dateInURL(u *url.URL) string {
	path := u.EscapedPath()
	for _, re := range []*regexp.Regexp{urlDateParts, urlDateRun} {
		if m := re.FindStringSubmatch(path); m != nil {
			y, mo, d := m[1], m[2], m[3]
			if len(mo) == 1 {
				mo = "0" + mo
			}
			if len(d) == 1 {
				d = "0" + d
			}
			if t, ok := parseIn(y+"-"+mo+"-"+d, dateLayouts[:1]); ok {
				return t.Format(time.DateOnly)
			}
		}
	}
	return ""
}

// dateInText is the publication day go-htmldate finds in doc's text, "" if
// none. It does not change doc.
func dateInText(doc *html.Node, pageURL *url.URL) (day string) {
	defer func() {
		if recover() != nil {
			day = ""
		}
	}()
	res, err := htmldate.FromDocument(doc, htmldate.Options{
		URL:                 pageURL.String(),
		UseOriginalDate:     true,
		SkipExtensiveSearch: true,
		MinDate:             time.Date(1995, 1, 1, 0, 0, 0, 0, time.UTC),
		MaxDate:             time.Now().AddDate(0, 0, 1),
	})
	if err != nil || res.IsZero() {
		return ""
	}
	return res.DateTime.Format(time.DateOnly)
}
