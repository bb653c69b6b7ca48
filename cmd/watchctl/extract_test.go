package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const savedArticle = `<!doctype html><html lang="en"><head><title>Bridge | The Daily</title>
<link rel="canonical" href="https://news.example.com/2024/05/01/bridge">
<meta property="article:published_time" content="2024-05-01T09:30:00+02:00">
<meta name="author" content="Anna Smith"></head><body><nav><a href="/">Home</a></nav><article><h1>Old bridge to close</h1>
<p>The council voted on Tuesday to close the old bridge for repairs, a decision that residents had
awaited for more than a year while the cracks in its pillars grew wider.</p>
<p>Engineers said the work would take eight months and cost about four million euros, paid by the
region and the city in equal parts, with a temporary footbridge open from June.</p></article></body></html>`

func TestExtractPrintsTheArticleAsJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, []byte(savedArticle), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"extract", path}, // the page's canonical URL
		{"extract", "--url", "https://www.example.com/bridge?utm=x", path},
	} {
		code, out, errOut := runCLI(t, env{}, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%q: not JSON: %v\n%s", args, err, out)
		}
		if got["headline"] != "Bridge | The Daily" && got["headline"] != "Old bridge to close" {
			t.Errorf("%q: headline = %v", args, got["headline"])
		}
		if got["datePublished"] != "2024-05-01T09:30:00+02:00" || got["url"] != "https://news.example.com/2024/05/01/bridge" {
			t.Errorf("%q: datePublished = %v, url = %v", args, got["datePublished"], got["url"])
		}
		if body, _ := got["articleBody"].(string); !strings.Contains(body, "eight months") || strings.Contains(body, "Home") {
			t.Errorf("%q: articleBody = %q", args, body)
		}
	}
}

func TestExtractRefusesBadInputWithExitTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noURL := filepath.Join(dir, "nourl.html")
	empty := filepath.Join(dir, "empty.html")
	os.WriteFile(noURL, []byte("<html><body><p>text</p></body></html>"), 0o600)
	os.WriteFile(empty, []byte("<html><body></body></html>"), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"extract", filepath.Join(dir, "missing.html")}, "no such file"},
		{[]string{"extract", noURL}, "--url"},
		{[]string{"extract", "--url", "/relative", noURL}, "absolute http(s) URL"},
		{[]string{"extract", "--url", "https://example.com/", empty}, "no article found"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, env{}, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}
