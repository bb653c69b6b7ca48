package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// corpusDir is the shared corpus of real pages (see shared/corpus/README.md).
// It is not part of the repository: outside CI the tests that need it skip
// when it is absent; with CI=true they fail.
const corpusDir = "../../../shared/corpus/pages"

func corpusPages(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.html"))
	if err != nil || len(files) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("corpus %s is missing (CI=true): %v", corpusDir, err)
		}
		t.Skipf("corpus %s is absent; skipping (it is shared/corpus/pages beside the repository)", corpusDir)
	}
	return files
}

func readPage(t testing.TB, name string) []byte {
	t.Helper()
	corpusPages(t)
	b, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeHTMLCorpus(t *testing.T) {
	for _, f := range corpusPages(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, cs := DecodeHTML(b, "")
		if !utf8.Valid(out) || cs == "" {
			t.Errorf("%s: valid UTF-8 %v, charset %q", filepath.Base(f), utf8.Valid(out), cs)
		}
	}
}

func TestDecodeHTMLCorpusKnownText(t *testing.T) {
	tests := []struct {
		file, contentType, charset, text string
	}{
		// Declares gb2312 in a meta, holds UTF-8.
		{"readability__qq.html", "", "utf-8", "人工智能迈上新台阶"},
		{"readability__qq.html", "text/html; charset=GB2312", "utf-8", "腾讯网"},
		// Declared by meta.
		{"myhtml__25_windows-1251.html", "", "windows-1251", "Все об искусстве Аниме"},
		{"gumbo__arabic_newspapers.html", "", "windows-1256", "الصحف و الجرائد باللغة العربية"},
		{"wpull__videogame_top.html", "", "shift_jis", "ピカデリーサーカス"},
		{"trafilatura__winfuture.de-NASA.html", "", "windows-1252", "Gebühren oder Werbung"},
		// UTF-16LE with a byte order mark.
		{"wpull__kcna.html", "text/html; charset=iso-8859-1", "utf-16le", "조선통신 朝鮮通信"},
		// Its gb2312 meta is past the first 1024 bytes: detected.
		{"trafilatura__archive.org.he.xinhuanet.com.25340717.html", "", "gb18030", "话剧《约定无期限》河北各市巡演结束"},
		// Its utf-8 meta is past the first 1024 bytes and wrong: detected.
		{"trafilatura__nmb-media.de.ebay.html", "", "windows-1252", "Auswählen"},
		// UTF-8 with three stray bytes stays UTF-8.
		{"trafilatura__der-erfolg-gibt-recht.de.rinderleber.html", "", "utf-8", "So schön winterlich"},
		// Tiny undeclared pages are beyond detection; a header rescues them.
		{"wpull__krokozyabry.html", "text/html; charset=koi8-r", "koi8-r", "Кракозябры"},
		{"wpull__mojibake.html", "text/html; charset=shift_jis", "shift_jis", "文字化け"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, cs := DecodeHTML(readPage(t, tt.file), tt.contentType)
			if cs != tt.charset {
				t.Errorf("charset = %q, want %q", cs, tt.charset)
			}
			if !bytes.Contains(out, []byte(tt.text)) {
				t.Errorf("decoded page lacks %q", tt.text)
			}
		})
	}
}

// BenchmarkDecodeHTML measures decoding real pages: the common case (valid
// UTF-8, declared), a mislabelled page, declared legacy encodings and
// pages that need detection.
func BenchmarkDecodeHTML(b *testing.B) {
	for _, name := range []string{
		"readability__wikipedia-2.html",                           // 1 MB UTF-8
		"readability__qq.html",                                    // UTF-8 labelled gb2312
		"myhtml__25_windows-1251.html",                            // declared windows-1251
		"wpull__videogame_top.html",                               // declared Shift_JIS
		"trafilatura__archive.org.he.xinhuanet.com.25340717.html", // detected GB18030
		"trafilatura__nmb-media.de.ebay.html",                     // detected windows-1252
	} {
		b.Run(name, func(b *testing.B) {
			page := readPage(b, name)
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				DecodeHTML(page, "text/html")
			}
		})
	}
}
