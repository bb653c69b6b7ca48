package article

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ldArticle is what the JSON-LD of a page says about its article.
type ldArticle struct {
	headline, description, published, modified, section, language, image, url string
	authors, keywords                                                         []string
	// notFree is true when the article says isAccessibleForFree false.
	notFree bool
}

// articleTypes are the schema.org types of an article (Article and the
// types below it that pages use), and of the pages that carry one.
var articleTypes = map[string]int{
	"newsarticle": 1, "reportagenews": 1, "analysisnewsarticle": 1, "opinionnewsarticle": 1,
	"reviewnewsarticle": 1, "backgroundnewsarticle": 1, "askpublicnewsarticle": 1,
	"blogposting": 1, "liveblogposting": 1, "article": 1, "techarticle": 1, "scholarlyarticle": 1,
	"socialmediaposting": 1, "satiricalarticle": 1, "report": 1, "medicalscholarlyarticle": 1,
	"discussionforumposting": 1, "advertisercontentarticle": 1, "posting": 1,
	// A page about the article: used only when no article is stated.
	"webpage": 2, "itempage": 2, "aboutpage": 2,
}

// maxLDObjects caps the objects read from a page's JSON-LD.
const maxLDObjects = 2000

// readJSONLD reads the blocks and returns the first article they state
// (the first page object when none), its @id references resolved.
func readJSONLD(blocks []string) ldArticle {
	var objs []map[string]any
	for _, b := range blocks {
		b = strings.TrimSpace(b)
		b = strings.TrimPrefix(b, "<!--")
		b = strings.TrimSuffix(b, "-->")
		b = strings.TrimPrefix(strings.TrimSpace(b), "//<![CDATA[")
		b = strings.TrimSuffix(strings.TrimSpace(b), "//]]>")
		var v any
		dec := json.NewDecoder(strings.NewReader(b))
		if err := dec.Decode(&v); err != nil {
			// Some pages put a stray comma or a second object after the
			// first; what parsed before the error is lost, as json says.
			continue
		}
		objs = flatten(v, objs, 0)
	}
	byID := map[string]map[string]any{}
	for _, o := range objs {
		if id, ok := o["@id"].(string); ok && len(o) > 1 {
			if _, seen := byID[id]; !seen {
				byID[id] = o
			}
		}
	}
	var best map[string]any
	bestRank := 3
	for _, o := range objs {
		if r := typeRank(o["@type"]); r < bestRank {
			best, bestRank = o, r
		}
	}
	if best == nil {
		return ldArticle{}
	}
	a := ldArticle{
		headline:    str(best["headline"]),
		description: str(best["description"]),
		published:   str(best["datePublished"]),
		modified:    str(best["dateModified"]),
		section:     first(strs(best["articleSection"], byID, "name")),
		language:    first(strs(best["inLanguage"], byID, "alternateName")),
		image:       first(strs(best["image"], byID, "url")),
		url:         str(best["url"]),
	}
	switch free := best["isAccessibleForFree"].(type) {
	case bool:
		a.notFree = !free
	case string:
		a.notFree = strings.EqualFold(strings.TrimSpace(free), "false")
	}
	if a.headline == "" {
		a.headline = str(best["name"])
	}
	if a.published == "" {
		a.published = str(best["dateCreated"])
	}
	authors := strs(best["author"], byID, "name")
	if len(authors) == 0 {
		authors = strs(best["creator"], byID, "name")
	}
	a.authors = authors
	for _, k := range strs(best["keywords"], byID, "name") {
		a.keywords = append(a.keywords, strings.Split(k, ",")...)
	}
	return a
}

// flatten appends the objects of v: itself, the members of an array, the
// objects of a @graph and a mainEntity, bounded in depth and number.
func flatten(v any, out []map[string]any, depth int) []map[string]any {
	if depth > 4 || len(out) >= maxLDObjects {
		return out
	}
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			out = flatten(e, out, depth+1)
		}
	case map[string]any:
		out = append(out, t)
		for _, key := range []string{"@graph", "mainEntity", "mainEntityOfPage", "hasPart"} {
			if sub, ok := t[key]; ok {
				out = flatten(sub, out, depth+1)
			}
		}
	}
	return out
}

// typeRank ranks an @type: 1 an article, 2 a web page, 3 anything else.
func typeRank(t any) int {
	rank := 3
	var types []string
	switch v := t.(type) {
	case string:
		types = []string{v}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	for _, s := range types {
		s = s[strings.LastIndexAny(s, "/:")+1:]
		if r, ok := articleTypes[strings.ToLower(s)]; ok && r < rank {
			rank = r
		}
	}
	return rank
}

// str is v as a string when it is one (or a number).
func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any:
		if s, ok := t["@value"].(string); ok {
			return s
		}
	}
	return ""
}

// strs reads a value that may be a string, an object (whose field key is
// taken, after resolving an @id reference) or an array of them.
func strs(v any, byID map[string]map[string]any, key string) []string {
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 3 || len(out) > 50 {
			return
		}
		switch t := v.(type) {
		case string:
			out = append(out, t)
		case []any:
			for _, e := range t {
				walk(e, depth+1)
			}
		case map[string]any:
			if len(t) == 1 {
				if id, ok := t["@id"].(string); ok {
					if ref, ok := byID[id]; ok {
						t = ref
					}
				}
			}
			if s := str(t[key]); s != "" {
				out = append(out, s)
			} else if key == "url" {
				walk(t["contentUrl"], depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
