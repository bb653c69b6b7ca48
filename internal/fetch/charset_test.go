package fetch

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
)

// fixtureText holds a headline-like title and link texts per language,
// enough for detection to be reliable on a short page.
var fixtureText = map[string][]string{
	"zh-hans": {
		"新闻首页", "国务院召开常务会议 部署进一步扩大内需的政策措施",
		"北京今日迎来入冬以来最强降雪，交通部门提醒市民注意出行安全。",
		"新华社北京电 国家统计局今天发布数据显示，前三季度国内生产总值同比增长。",
		"教育部发布通知，要求各地做好高校毕业生就业工作，拓宽就业渠道。",
		"中国足球队在亚洲杯比赛中以二比一战胜对手，晋级八强。",
	},
	"zh-hant": {
		"新聞首頁", "行政院會通過明年度總預算案 將送立法院審議",
		"台北今天氣溫偏低，氣象局提醒民眾注意保暖，外出時攜帶雨具。",
		"中央社記者台北電 主計總處今天公布最新統計，第三季經濟成長率優於預期。",
		"颱風逐漸遠離，各地交通陸續恢復正常，鐵路局表示列車將照常行駛。",
		"國際書展在台北世貿中心開幕，吸引許多讀者前往參觀。",
	},
	"ja": {
		"ニュース速報", "政府は来年度予算案を閣議決定した",
		"東京都内では今日、今年一番の冷え込みとなり、各地で氷点下を記録しました。",
		"日本銀行は金融政策決定会合で、大規模な金融緩和を維持することを決めました。",
		"新しい鉄道路線が来月開業する予定で、地元では期待の声が高まっています。",
		"台風の接近に伴い、気象庁は大雨と強風に警戒するよう呼びかけています。",
	},
	"ko": {
		"뉴스 홈", "정부는 내년도 예산안을 국회에 제출했다",
		"서울은 오늘 올겨울 들어 가장 추운 날씨를 보였으며 곳곳에서 영하의 기온을 기록했습니다.",
		"한국은행은 기준금리를 동결하고 물가 안정에 주력하겠다고 밝혔습니다.",
		"새로운 지하철 노선이 다음 달 개통될 예정이어서 주민들의 기대가 높아지고 있습니다.",
		"태풍이 북상함에 따라 기상청은 강풍과 폭우에 대비할 것을 당부했습니다.",
	},
	"ru": {
		"Главные новости", "Правительство утвердило проект бюджета на следующий год",
		"В Москве сегодня ожидается облачная погода, местами небольшой снег.",
		"Центральный банк сохранил ключевую ставку и заявил о намерении снизить инфляцию.",
		"Новая линия метро откроется в следующем месяце, жители района ждут этого события.",
		"Сборная России по хоккею одержала победу в финальном матче чемпионата мира.",
	},
	"de": {
		"Nachrichten für Bürger", "Bundesregierung beschließt Entlastungen für Familien",
		"In München wurde heute ein neues Museum eröffnet, das Kunstwerke aus fünf Jahrhunderten zeigt.",
		"Die Europäische Zentralbank hat den Leitzins überraschend erhöht.",
		"Der Fußballverein gewann das Spiel gegen den Tabellenführer mit drei zu eins Toren.",
		"Schüler und Lehrer protestieren gegen die geplante Schließung der Grundschule.",
	},
}

// fixturePage returns a small homepage in UTF-8 whose text is in lang and
// whose head declares metaLabel, if set.
func fixturePage(lang, metaLabel string) string {
	lines := fixtureText[lang]
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head>")
	if metaLabel != "" {
		fmt.Fprintf(&b, `<meta http-equiv="Content-Type" content="text/html; charset=%s">`, metaLabel)
	}
	fmt.Fprintf(&b, "<title>%s</title>\n<link rel=stylesheet href=/site.css>\n</head>\n<body><ul>\n", lines[0])
	for i, l := range lines[1:] {
		fmt.Fprintf(&b, "<li><a href=\"/news/%d.html\" class=\"headline\">%s</a></li>\n", i, l)
	}
	b.WriteString("</ul></body></html>\n")
	return b.String()
}

func encode(t testing.TB, enc encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding fixture: %v", err)
	}
	return b
}

func TestDecodeHTMLEncodings(t *testing.T) {
	tests := []struct {
		name  string
		lang  string
		enc   encoding.Encoding
		label string // as a server or author would write it
		want  string // the charset DecodeHTML must report
	}{
		{"gbk", "zh-hans", simplifiedchinese.GBK, "GBK", "gb18030"},
		{"gb2312", "zh-hans", simplifiedchinese.GBK, "gb2312", "gb18030"},
		{"gb18030", "zh-hans", simplifiedchinese.GB18030, "gb18030", "gb18030"},
		{"big5", "zh-hant", traditionalchinese.Big5, "big5", "big5"},
		{"shift_jis", "ja", japanese.ShiftJIS, "Shift_JIS", "shift_jis"},
		{"euc-jp", "ja", japanese.EUCJP, "EUC-JP", "euc-jp"},
		{"euc-kr", "ko", korean.EUCKR, "euc-kr", "euc-kr"},
		{"windows-1251", "ru", charmap.Windows1251, "windows-1251", "windows-1251"},
		{"koi8-r", "ru", charmap.KOI8R, "KOI8-R", "koi8-r"},
		{"windows-1252", "de", charmap.Windows1252, "iso-8859-1", "windows-1252"},
	}
	for _, tt := range tests {
		for _, mode := range []string{"header", "meta", "none"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				meta, contentType := "", "text/html"
				switch mode {
				case "header":
					contentType = "text/html; charset=" + tt.label
				case "meta":
					meta = tt.label
				}
				page := fixturePage(tt.lang, meta)
				got, cs := DecodeHTML(encode(t, tt.enc, page), contentType)
				if cs != tt.want {
					t.Errorf("charset = %q, want %q", cs, tt.want)
				}
				if string(got) != page {
					t.Errorf("decoded page differs from the original:\n got %.200q\nwant %.200q", got, page)
				}
			})
		}
	}
}

func TestDecodeHTMLBOM(t *testing.T) {
	page := fixturePage("zh-hant", "") + fixturePage("ru", "")
	tests := []struct {
		name string
		enc  encoding.Encoding
		want string
	}{
		{"utf-16le", unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "utf-16le"},
		{"utf-16be", unicode.UTF16(unicode.BigEndian, unicode.UseBOM), "utf-16be"},
		{"utf-8", unicode.UTF8BOM, "utf-8"},
	}
	for _, tt := range tests {
		body := encode(t, tt.enc, page)
		// The BOM wins over a contradicting header and meta, as in browsers.
		for _, ct := range []string{"", "text/html; charset=iso-8859-1", "text/html; charset=utf-8"} {
			got, cs := DecodeHTML(body, ct)
			if cs != tt.want || string(got) != page {
				t.Errorf("%s with Content-Type %q: charset %q, text equal %v", tt.name, ct, cs, string(got) == page)
			}
		}
	}
}

func TestDecodeHTMLMislabelled(t *testing.T) {
	tests := []struct {
		name        string
		body        []byte
		contentType string
		want        string
		text        string // must appear in the output
	}{
		{"utf-8 labelled gb2312 by meta", []byte(fixturePage("zh-hans", "gb2312")), "", "utf-8", "国务院召开常务会议"},
		{"utf-8 labelled gb2312 by header", []byte(fixturePage("zh-hans", "")), "text/html; charset=gb2312", "utf-8", "国务院召开常务会议"},
		{"utf-8 labelled windows-1251", []byte(fixturePage("ru", "")), "text/html; charset=windows-1251", "utf-8", "Правительство"},
		{"utf-8 labelled iso-8859-1", []byte("<p>Café crème brûlée</p>"), "text/html; charset=iso-8859-1", "utf-8", "Café crème brûlée"},
		{"utf-8 with a stray byte labelled iso-8859-1", []byte(strings.Repeat("<p>Grüße aus Köln</p>", 5) + "\xa0"), "text/html; charset=iso-8859-1", "utf-8", "Grüße aus Köln"},
		{"gbk labelled utf-8", encode(t, simplifiedchinese.GBK, fixturePage("zh-hans", "")), "text/html; charset=utf-8", "gb18030", "国务院召开常务会议"},
		{"windows-1251 labelled utf-8 by meta", encode(t, charmap.Windows1251, fixturePage("ru", "utf-8")), "", "windows-1251", "Правительство"},
		{"utf-8 labelled utf-16 by meta", []byte(fixturePage("de", "utf-16")), "", "utf-8", "München"},
		{"utf-8 labelled utf-16le by header", []byte(fixturePage("de", "")), "text/html; charset=utf-16le", "utf-8", "München"},
		{"ascii labelled iso-8859-1 keeps its label", []byte("<p>plain</p>"), "text/html; charset=iso-8859-1", "windows-1252", "plain"},
		{"ascii labelled ascii", []byte("<p>plain</p>"), "text/html; charset=us-ascii", "windows-1252", "plain"},
		{"unknown label falls back", []byte("<p>Grüße</p>"), "text/html; charset=bogus-42", "utf-8", "Grüße"},
		{"replacement label is ignored", []byte("<p>Grüße</p>"), "text/html; charset=iso-2022-kr", "utf-8", "Grüße"},
		{"malformed content type", []byte("<p>plain</p>"), "text/html; charset=koi8-r;;", "koi8-r", "plain"},
		{"quoted charset", []byte("<p>plain</p>"), `text/html; charset="windows-1251"`, "windows-1251", "plain"},
		{"meta charset attribute", []byte(`<meta charset="koi8-r"><p>plain</p>`), "", "koi8-r", "plain"},
		{"meta x-user-defined", []byte(`<meta charset="x-user-defined"><p>caf` + "\xe9</p>"), "", "windows-1252", "café"},
		{"iso-2022-jp undeclared", encode(t, japanese.ISO2022JP, "<p>日本語のニュース</p>"), "", "iso-2022-jp", "日本語のニュース"},
		{"empty", nil, "", "utf-8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cs := DecodeHTML(tt.body, tt.contentType)
			if cs != tt.want {
				t.Errorf("charset = %q, want %q", cs, tt.want)
			}
			if !bytes.Contains(got, []byte(tt.text)) {
				t.Errorf("output %.120q lacks %q", got, tt.text)
			}
			if !utf8.Valid(got) {
				t.Error("output is not valid UTF-8")
			}
		})
	}
}

func TestDecodeHTMLInvalidBytes(t *testing.T) {
	tests := []struct {
		name        string
		body        []byte
		contentType string
		want        string
	}{
		{"utf-8 with a bad byte", []byte("<p>ok \xff still ok</p>"), "text/html; charset=utf-8", "<p>ok \uFFFD still ok</p>"},
		{"utf-8 truncated at the end", []byte("<p>ok</p>\xe4\xb8"), "text/html; charset=utf-8", "<p>ok</p>\uFFFD"},
		{"shift_jis truncated lead byte", append(encode(t, japanese.ShiftJIS, "<p>日本</p>"), 0x83), "text/html; charset=shift_jis", "<p>日本</p>\uFFFD"},
		{"gb18030 bad trail byte", []byte("<p>\x81\x20x</p>"), "text/html; charset=gb18030", "<p>\uFFFD x</p>"},
		{"utf-16le odd length", append(encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "<p>hi</p>"), 'x'), "", "<p>hi</p>\uFFFD"},
		{"utf-16le lone surrogate", append(encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "<p>"), 0x00, 0xD8, 'a', 0), "", "<p>\uFFFDa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := DecodeHTML(tt.body, tt.contentType)
			if string(got) != tt.want {
				t.Errorf("DecodeHTML = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeHTMLAliasesValidUTF8(t *testing.T) {
	body := []byte(fixturePage("ja", "utf-8"))
	got, _ := DecodeHTML(body, "text/html; charset=utf-8")
	if &got[0] != &body[0] {
		t.Error("valid UTF-8 was copied")
	}
}

func FuzzDecodeHTML(f *testing.F) {
	f.Add([]byte(fixturePage("zh-hans", "gb2312")), "")
	f.Add(encode(f, simplifiedchinese.GBK, fixturePage("zh-hans", "")), "text/html; charset=utf-8")
	f.Add(encode(f, charmap.KOI8R, fixturePage("ru", "")), "")
	f.Add(encode(f, japanese.ShiftJIS, fixturePage("ja", "shift_jis")), "text/html")
	f.Add([]byte("\xff\xfe<\x00p\x00>\x00\x00\xd8"), "text/html; charset=utf-8")
	f.Add([]byte("\xfe\xff\x00<"), "")
	f.Add([]byte(`<meta charset="utf-16"><p>x`), "text/html; charset=")
	f.Add([]byte("<script>\xff</script><!-- \xe9 --><p title=\"\xe9\">"), "text/html; charset=\"")
	f.Add([]byte("\x1b$B$3\x1b(B"), "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		in := bytes.Clone(body)
		out, cs := DecodeHTML(body, contentType)
		if !utf8.Valid(out) {
			t.Fatalf("output is not valid UTF-8: %q", out)
		}
		if cs == "" {
			t.Fatal("empty charset name")
		}
		if !bytes.Equal(in, body) {
			t.Fatal("DecodeHTML modified its input")
		}
	})
}
