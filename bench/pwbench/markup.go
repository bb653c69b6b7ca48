package pwbench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// language is a synthetic portal's language and the charset it is served in.
// Its words are all encodable in that charset.
type language struct {
	code    string
	charset string            // as declared in Content-Type and <meta>
	enc     encoding.Encoding // nil for UTF-8
	sep     string            // between words
	words   []string
}

// languages is the farm's mix: most portals are UTF-8, many are not.
var languages = []*language{
	{code: "en", charset: "utf-8", sep: " ", words: strings.Fields(
		"government minister election market city council police report season final storm weather school " +
			"hospital court budget energy prices strike festival museum railway airport river bridge coast team " +
			"coach record study science climate health village mayor plan new old big first last")},
	{code: "fr", charset: "utf-8", sep: " ", words: strings.Fields(
		"gouvernement élection marché ville conseil police été hiver école hôpital tribunal énergie prix grève " +
			"fête musée chemin aéroport rivière pont côte équipe entraîneur record étude santé village maire " +
			"projet nouveau première dernière")},
	{code: "de", charset: "windows-1252", enc: charmap.Windows1252, sep: " ", words: strings.Fields(
		"Regierung Wahl Markt Stadt Gemeinderat Polizei Bericht Saison Finale Unwetter Schule Krankenhaus " +
			"Gericht Haushalt Energie Preise Streik Fest Museum Bahn Flughafen Fluss Brücke Küste Mannschaft " +
			"Trainer Rekord Studie Klima Gesundheit Dorf Bürgermeister Plan neue größte erste letzte über für")},
	{code: "ru", charset: "windows-1251", enc: charmap.Windows1251, sep: " ", words: strings.Fields(
		"правительство выборы рынок город совет полиция доклад сезон финал погода школа больница суд бюджет " +
			"энергия цены забастовка фестиваль музей железная дорога аэропорт река мост команда тренер рекорд " +
			"наука климат здоровье деревня мэр план новый первый последний")},
	{code: "zh", charset: "gbk", enc: simplifiedchinese.GBK, sep: "", words: strings.Fields(
		"政府 选举 市场 城市 委员会 警方 报告 赛季 决赛 天气 学校 医院 法院 预算 能源 价格 罢工 节日 博物馆 铁路 " +
			"机场 河流 大桥 海岸 球队 教练 纪录 研究 科学 气候 健康 村庄 市长 计划 新 首次 最后")},
	{code: "ja", charset: "shift_jis", enc: japanese.ShiftJIS, sep: "", words: strings.Fields(
		"政府 選挙 市場 都市 議会 警察 報告 季節 決勝 天気 学校 病院 裁判所 予算 エネルギー 価格 ストライキ 祭り " +
			"博物館 鉄道 空港 川 橋 海岸 チーム 監督 記録 研究 科学 気候 健康 村 市長 計画 新しい 初 最後")},
}

// languageMix picks a page's language: half UTF-8, the rest in legacy
// charsets, as on the portals portalwatch is for.
func languageMix(i int) *language {
	switch i % 10 {
	case 0, 1, 2, 3:
		return languages[0]
	case 4:
		return languages[1]
	case 5, 6:
		return languages[2]
	case 7:
		return languages[3]
	case 8:
		return languages[4]
	default:
		return languages[5]
	}
}

var slugWords = strings.Fields("alpha bravo city council market storm final report vote plan river bridge " +
	"court school health energy price team coach record study climate village mayor")

var sections = strings.Fields("politics economy world sport culture science local opinion travel tech")

// pageBuilder writes one synthetic portal homepage: a head with styles,
// structured data and scripts; a header with nested navigation; a hero and
// sections of teasers (image links, headline links, kicker and summary,
// comment links); a most-read sidebar; a footer full of links that are not
// kept (mailto:, javascript:, tel:, fragment-only); unclosed <p> and <li>
// tags, entities and comments, as real portals have. The "latest" list
// whose anchors change every round is left out: the farm splices it in.
type pageBuilder struct {
	rng     *rand.Rand
	lang    *language
	host    string // host:port
	b       strings.Builder
	anchors int
	id      int
}

func (p *pageBuilder) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = p.lang.words[p.rng.IntN(len(p.lang.words))]
	}
	return strings.Join(w, p.lang.sep)
}

func (p *pageBuilder) slug() string {
	n := 3 + p.rng.IntN(4)
	w := make([]string, n)
	for i := range w {
		w[i] = slugWords[p.rng.IntN(len(slugWords))]
	}
	return strings.Join(w, "-")
}

// href spells a site link the ways portals do: relative, absolute, with
// tracking parameters or a fragment, now and then on another host.
func (p *pageBuilder) href(path string) string {
	switch r := p.rng.IntN(20); {
	case r < 11:
		return path
	case r < 14:
		return "http://" + p.host + path
	case r < 16:
		return path + "?utm_source=homepage&amp;utm_medium=teaser&amp;utm_campaign=" + p.slug()
	case r < 18:
		return path + "#comments"
	default:
		return "https://www.partner-" + string(rune('a'+p.rng.IntN(26))) + ".example" + path
	}
}

func (p *pageBuilder) a(href, attrs, inner string) {
	p.anchors++
	fmt.Fprintf(&p.b, `<a href="%s"%s>%s</a>`, href, attrs, inner)
}

func (p *pageBuilder) teaser(section string, size string) {
	p.id++
	path := fmt.Sprintf("/%s/2024/%02d/%s-%d.html", section, 1+p.rng.IntN(12), p.slug(), 100000+p.id*7)
	href := p.href(path)
	fmt.Fprintf(&p.b, "<article class=\"teaser teaser--%s\" data-id=\"%d\" data-section=\"%s\">\n", size, p.id, section)
	img := fmt.Sprintf(`<figure class="teaser__media"><picture><source type="image/webp" srcset="/img/%d-480.webp 480w, /img/%d-960.webp 960w" sizes="(max-width: 600px) 100vw, 33vw"><img src="/img/%d-480.jpg" alt="%s" loading="lazy" width="480" height="270"></picture></figure>`,
		p.id, p.id, p.id, p.words(4))
	p.a(href, ` class="teaser__link" tabindex="-1" aria-hidden="true"`, img)
	fmt.Fprintf(&p.b, "\n<div class=\"teaser__body\"><span class=\"kicker\">%s</span>\n<h3 class=\"teaser__title\">", p.words(2))
	p.a(href, ` class="teaser__headline"`, p.words(5+p.rng.IntN(6)))
	fmt.Fprintf(&p.b, "</h3>\n<p class=\"teaser__summary\">%s &ndash; %s", p.words(14+p.rng.IntN(20)), p.words(8))
	if p.rng.IntN(3) > 0 {
		p.b.WriteString("</p>") // a third of the summaries are left open, as templates do
	}
	fmt.Fprintf(&p.b, "\n<footer class=\"teaser__meta\"><time datetime=\"2024-05-%02dT%02d:%02d:00+02:00\">%02d:%02d</time> ",
		1+p.rng.IntN(28), p.rng.IntN(24), p.rng.IntN(60), p.rng.IntN(24), p.rng.IntN(60))
	if p.rng.IntN(2) == 0 {
		p.a(path+"#comments", ` class="teaser__comments" title="comments"`, fmt.Sprintf(`<svg class="icon"><use xlink:href="#icon-comment"></use></svg> %d`, p.rng.IntN(400)))
	}
	p.b.WriteString("</footer></div>\n</article>\n")
}

// build returns the page as two halves around the spot where the latest
// news list goes, in UTF-8.
func (p *pageBuilder) build(targetBytes, targetAnchors, latestAnchors int) (prefix, suffix string) {
	var body strings.Builder
	head := func() string {
		var h strings.Builder
		fmt.Fprintf(&h, "<!DOCTYPE html>\n<html lang=\"%s\" class=\"no-js\">\n<head>\n<meta charset=\"%s\">\n", p.lang.code, p.lang.charset)
		fmt.Fprintf(&h, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s &#8211; %s</title>\n", p.words(3), p.words(2))
		fmt.Fprintf(&h, "<meta name=\"description\" content=\"%s\">\n<link rel=\"stylesheet\" href=\"/assets/main.%x.css\">\n", p.words(12), p.rng.Uint32())
		h.WriteString("<style>\n")
		for i := range 40 {
			fmt.Fprintf(&h, ".c%d{margin:%dpx %dpx;padding:0 %dpx;color:#%06x;font:%dpx/1.4 system-ui,sans-serif}\n", i, i%7, i%11, i%5, p.rng.IntN(1<<24), 12+i%9)
		}
		h.WriteString("</style>\n")
		return h.String()
	}()

	p.b.Reset()
	p.b.WriteString("<body class=\"home\">\n<!-- header -->\n<div id=\"page\"><header class=\"site-header\"><div class=\"top-bar\">")
	p.a("/", ` class="logo" aria-label="home"`, `<svg viewBox="0 0 200 40"><path d="M0 0h200v40H0z"/></svg>`)
	p.b.WriteString("</div>\n<nav class=\"main-nav\" aria-label=\"sections\"><ul>\n")
	for _, s := range sections {
		fmt.Fprintf(&p.b, "<li class=\"nav__item\">")
		p.a("/"+s+"/", ` class="nav__link"`, p.words(1))
		p.b.WriteString("\n<ul class=\"nav__sub\">\n")
		for range 3 + p.rng.IntN(4) {
			p.b.WriteString("<li>")
			p.a("/"+s+"/"+p.slug()+"/", "", p.words(2))
			p.b.WriteString("\n") // <li> left open: the parser closes it
		}
		p.b.WriteString("</ul></li>\n")
	}
	p.b.WriteString("</ul></nav></header>\n<main id=\"main\">\n<section class=\"hero\">\n")
	for range 3 {
		p.teaser(sections[p.rng.IntN(len(sections))], "xl")
	}
	p.b.WriteString("</section>\n<section class=\"latest\" id=\"latest\"><h2>")
	p.b.WriteString(p.words(2))
	p.b.WriteString("</h2>\n<ul class=\"latest__list\">\n")
	mid := p.b.Len()

	p.b.WriteString("</ul></section>\n")
	footerAnchors := 40
	for si := 0; p.anchors < targetAnchors-latestAnchors-footerAnchors-10; si++ {
		s := sections[si%len(sections)]
		fmt.Fprintf(&p.b, "<section class=\"section section--%s\"><h2 class=\"section__title\">", s)
		p.a("/"+s+"/", "", p.words(1))
		p.b.WriteString("</h2>\n<div class=\"grid\">\n")
		for range 6 + p.rng.IntN(6) {
			p.teaser(s, []string{"s", "m", "m", "l"}[p.rng.IntN(4)])
		}
		p.b.WriteString("</div></section>\n<div class=\"ad ad--billboard\" data-slot=\"" + s + "\"><script>window.ads&&ads.push({slot:\"" + s + "\"})</script></div>\n")
	}
	p.b.WriteString("<aside class=\"most-read\"><h2>" + p.words(2) + "</h2><ol>\n")
	for range 10 {
		p.b.WriteString("<li>")
		p.a(p.href(fmt.Sprintf("/%s/%s-%d.html", sections[p.rng.IntN(len(sections))], p.slug(), 200000+p.rng.IntN(1e6))), "", p.words(6))
		p.b.WriteString("</li>\n")
	}
	p.b.WriteString("</ol></aside>\n</main>\n<footer class=\"site-footer\"><div class=\"footer__cols\">\n")
	for p.anchors < targetAnchors-latestAnchors {
		switch r := p.rng.IntN(10); {
		case r == 0:
			p.a("mailto:redaktion@"+p.host, "", p.words(1))
		case r == 1:
			p.a("javascript:void(0)", ` onclick="cmp.open()"`, p.words(2))
		case r == 2:
			p.a("#top", ` class="to-top"`, "&uarr;")
		default:
			p.a(p.href("/service/"+p.slug()+".html"), "", p.words(2))
		}
		p.b.WriteString("\n")
	}
	p.b.WriteString("</div></footer></div>\n")
	main := p.b.String()

	// Scripts and sprites bring the page to its size, as on real portals,
	// where most bytes are not text.
	pad := targetBytes - len(head) - len(main) - latestAnchors*160 - 200
	var tail strings.Builder
	if pad > 0 {
		fmt.Fprintf(&tail, "<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"NewsMediaOrganization\",\"items\":[")
		for i := 0; tail.Len() < pad/2; i++ {
			fmt.Fprintf(&tail, "{\"id\":%d,\"k\":\"%x\",\"t\":\"%s\"},", i, p.rng.Uint64(), p.slug())
		}
		tail.WriteString("{}]}</script>\n<svg style=\"display:none\">")
		for i := 0; tail.Len() < pad; i++ {
			fmt.Fprintf(&tail, "<symbol id=\"icon-%d\" viewBox=\"0 0 24 24\"><path d=\"M%d %dl%d %d %d-%dz\"/></symbol>", i, p.rng.IntN(24), p.rng.IntN(24), p.rng.IntN(9), p.rng.IntN(9), p.rng.IntN(9), p.rng.IntN(9))
		}
		tail.WriteString("</svg>\n")
	}
	tail.WriteString("<script src=\"/assets/app.js\" defer></script>\n</body>\n</html>\n")
	body.WriteString(head)
	body.WriteString("</head>\n")
	return body.String() + main[:mid], main[mid:] + tail.String()
}
