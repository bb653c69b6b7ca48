package pwbench

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

// corpusDir is ../shared/corpus next to the repository at repo.
func corpusDir(repo string) string {
	return filepath.Join(repo, "..", "shared", "corpus")
}

// historySite is one real homepage's successive versions.
type historySite struct {
	name      string
	ctype     string
	snapshots [][]byte
	links     [][]string // per snapshot, resolved against placeholderPage
}

// placeholderPage is the URL the replayed snapshots' links are resolved
// against to build the truth; each page's own URL maps onto it (canon).
const placeholderPage = "http://replay.example/h/0/"

// loadHistory reads every site of the corpus at dir through
// corpus.LoadHistory, each served with the Content-Type of its first
// snapshot ("text/html" when none was recorded), and parses each snapshot's
// links with the product's own parser.
func loadHistory(dir string, local bool) ([]*historySite, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "history"))
	if err != nil {
		return nil, fmt.Errorf("history corpus: %w (it lives in ../shared/corpus/history)", err)
	}
	base, _ := url.Parse(placeholderPage)
	var sites []*historySite
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		snaps, err := corpus.LoadHistory(dir, e.Name())
		if errors.Is(err, os.ErrNotExist) {
			continue // a folder without snapshots
		}
		if err != nil {
			return nil, fmt.Errorf("history corpus: %w", err)
		}
		s := &historySite{name: e.Name(), ctype: "text/html"}
		if snaps[0].ContentType != "" {
			s.ctype = snaps[0].ContentType
		}
		for _, snap := range snaps {
			if local {
				snap.Body = localLinks(snap.Body)
			}
			html, _ := fetch.DecodeHTML(snap.Body, s.ctype)
			links, _, err := domwalk.Parse(bytes.NewReader(html), base, domwalk.Limits{})
			if err != nil {
				return nil, fmt.Errorf("history %s/%s: %w", e.Name(), snap.Name, err)
			}
			urls := make([]string, len(links))
			for i, l := range links {
				urls[i] = l.URL
			}
			s.snapshots = append(s.snapshots, snap.Body)
			s.links = append(s.links, urls)
		}
		sites = append(sites, s)
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("history corpus %s: no sites", dir)
	}
	return sites, nil
}

// historyPage replays one site at one URL: version v serves snapshot v (the
// last one once they run out). The truth comes from the product's own parser
// (domwalk) on each snapshot, so this mode measures what the pipeline loses
// or doubles, not how well links are extracted; the tokens some of these
// portals change on every version count as new links, as they do for users.
type historyPage struct {
	site   *historySite
	prefix string // the page's own URL, "http://127.0.1.2:4711/h/7/"
	origin string // "http://127.0.1.2:4711/"
}

func newHistoryPages(n int, ls []net.Listener, dir string, localLinks bool) ([]*farmPage, error) {
	sites, err := loadHistory(dir, localLinks)
	if err != nil {
		return nil, err
	}
	pages := make([]*farmPage, n)
	for i := range pages {
		host := ls[i%len(ls)].Addr().String()
		hp := &historyPage{site: sites[i%len(sites)], origin: "http://" + host + "/",
			prefix: "http://" + host + "/h/" + strconv.Itoa(i) + "/"}
		pages[i] = &farmPage{content: hp, url: hp.prefix}
	}
	return pages, nil
}

func (h *historyPage) contentType() string { return h.site.ctype }
func (h *historyPage) lastVersion() int    { return len(h.site.snapshots) - 1 }
func (h *historyPage) render(v int) []byte { return h.site.snapshots[min(v, h.lastVersion())] }
func (h *historyPage) links(v int) []string {
	return h.site.links[min(v, h.lastVersion())]
}

// canon maps a URL resolved against this page's URL onto the placeholder.
func (h *historyPage) canon(u string) string {
	if rest, ok := strings.CutPrefix(u, h.prefix); ok {
		return placeholderPage + rest
	}
	if rest, ok := strings.CutPrefix(u, h.origin); ok {
		return "http://replay.example/" + rest
	}
	return u
}
