package pwbench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
)

// synthConfig shapes the synthetic portals.
type synthConfig struct {
	minKB, maxKB           int  // page size range, in KB (1000 bytes)
	minAnchors, maxAnchors int  // anchors per page, the latest list included
	perRound               int  // new anchors per page per round
	visible                int  // rounds a new anchor stays on the page
	keep                   bool // news anchors never leave: the page grows perRound a round
	sources                bool // each page serves a feed and a news sitemap too (see sources.go)
	sharedStoriesOnly      bool // with sources: they list only the homepage's stories, none of their own
	seed                   uint64
}

// synthPage is one synthetic portal homepage: a large static part (see
// pageBuilder) and a "latest" list showing the newest perRound × visible
// news links, perRound of which are new in each version.
type synthPage struct {
	cfg            synthConfig
	idx            int
	host, basePath string // "127.0.1.3:4711", "/p/17/"
	lang           *language
	header         bool // charset in the Content-Type header, not only in <meta>
	prefix, suffix []byte
}

// newSynthPages builds n pages spread over the listeners' addresses.
func newSynthPages(n int, ls []net.Listener, cfg synthConfig) []*farmPage {
	pages := make([]*farmPage, n)
	for i := range pages {
		host := ls[i%len(ls)].Addr().String()
		rng := rand.New(rand.NewPCG(cfg.seed, uint64(i)))
		sp := &synthPage{cfg: cfg, idx: i, host: host, basePath: fmt.Sprintf("/p/%d/", i),
			lang: languageMix(i), header: i%3 != 0}
		size := 1000 * (cfg.minKB + rng.IntN(cfg.maxKB-cfg.minKB+1))
		anchors := cfg.minAnchors + rng.IntN(cfg.maxAnchors-cfg.minAnchors+1)
		b := &pageBuilder{rng: rng, lang: sp.lang, host: host}
		pre, suf := b.build(size, anchors, cfg.perRound*cfg.visible)
		if cfg.sources {
			// The feed is linked as portals link theirs; the sitemap is
			// named by robots.txt (farm.robots).
			pre = strings.Replace(pre, "<head>\n",
				"<head>\n<link rel=\"alternate\" type=\"application/rss+xml\" title=\"Latest\" href=\""+feedPath+"\">\n", 1)
		}
		sp.prefix, sp.suffix = sp.encode(pre), sp.encode(suf)
		pages[i] = &farmPage{content: sp, url: "http://" + host + sp.basePath}
		if cfg.sources {
			pages[i].docs = sp.sourceDocs()
		}
	}
	return pages
}

func (s *synthPage) encode(text string) []byte {
	if s.lang.enc == nil {
		return []byte(text)
	}
	b, err := s.lang.enc.NewEncoder().Bytes([]byte(text))
	if err != nil {
		panic(fmt.Sprintf("synthetic page in %s: %v", s.lang.charset, err)) // the word lists are encodable
	}
	return b
}

func (s *synthPage) contentType() string {
	if s.header {
		return "text/html; charset=" + s.lang.charset
	}
	return "text/html" // the charset is only in <meta>
}

func (s *synthPage) lastVersion() int { return -1 }

// seqs returns the news sequence numbers shown at version v, newest first.
func (s *synthPage) seqs(v int) (first, end int) {
	end = (v + s.cfg.visible) * s.cfg.perRound
	if s.cfg.keep {
		return 0, end
	}
	return v * s.cfg.perRound, end
}

// newsPath is the path of news item seq.
func (s *synthPage) newsPath(seq int) string {
	return fmt.Sprintf("%snews/%d-%s-%s.html", s.basePath, seq,
		slugWords[seq%len(slugWords)], slugWords[(seq/7+s.idx)%len(slugWords)])
}

// newsHref spells the link to news item seq in one of the ways portals do;
// each resolves and normalises to "http://" + host + newsPath(seq). Beside
// the spellings every test farm uses (systest.Spell), a third of the links
// are relative to the page's own folder, which only a page-aware farm can
// write.
func (s *synthPage) newsHref(seq int) string {
	path := s.newsPath(seq)
	switch seq % 6 {
	case 0:
		return strings.TrimPrefix(path, s.basePath)
	case 5:
		return "./news/../" + strings.TrimPrefix(path, s.basePath)
	default:
		return systest.Spell(path, "http://"+s.host, seq)
	}
}

func (s *synthPage) links(v int) []string {
	first, end := s.seqs(v)
	out := make([]string, 0, end-first)
	for seq := first; seq < end; seq++ {
		out = append(out, "http://"+s.host+s.newsPath(seq))
	}
	return out
}

func (s *synthPage) render(v int) []byte {
	first, end := s.seqs(v)
	var list strings.Builder
	for seq := end - 1; seq >= first; seq-- {
		rng := rand.New(rand.NewPCG(s.cfg.seed^0x9e3779b97f4a7c15, uint64(s.idx)<<32|uint64(seq)))
		b := pageBuilder{rng: rng, lang: s.lang}
		fmt.Fprintf(&list, "<li class=\"latest__item\"><time>%02d:%02d</time> <a href=\"%s\">%s</a></li>\n",
			rng.IntN(24), rng.IntN(60), s.newsHref(seq), b.words(6+rng.IntN(5)))
	}
	var out bytes.Buffer
	out.Grow(len(s.prefix) + len(s.suffix) + 2*list.Len())
	out.Write(s.prefix)
	out.Write(s.encode(list.String()))
	out.Write(s.suffix)
	return out.Bytes()
}
