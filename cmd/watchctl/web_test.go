package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestTokenCreateListRevoke(t *testing.T) {
	e, st := migrated(t)
	code, out, errOut := runCLI(t, e, "token", "create", "feeds")
	secret := strings.TrimSpace(out)
	if code != exitOK || !strings.HasPrefix(secret, watch.TokenPrefix) || len(secret) < 20 {
		t.Fatalf("token create: exit %d %q %q", code, out, errOut)
	}
	if tok, err := st.VerifyToken(context.Background(), secret); err != nil || tok.Write {
		t.Fatalf("the printed token does not verify as read-only: %+v %v", tok, err)
	}
	if code, _, errOut := runCLI(t, e, "token", "create", "feeds", "--write"); code != exitUsage || !strings.Contains(errOut, "exists") {
		t.Errorf("second token of one name: exit %d %q, want 2", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "token", "create", "bad name"); code != exitUsage || strings.Count(errOut, "\n") != 1 {
		t.Errorf("bad token name: exit %d %q, want 2 and one line", code, errOut)
	}
	if code, _, _ := runCLI(t, e, "token", "create", "admin", "--write"); code != exitOK {
		t.Fatal("token create --write failed")
	}
	_, out, _ = runCLI(t, e, "token", "list")
	if !strings.Contains(out, "admin") || !strings.Contains(out, "read, write") || strings.Contains(out, secret) {
		t.Errorf("token list:\n%s", out)
	}
	if code, out, _ := runCLI(t, e, "token", "revoke", "feeds"); code != exitOK || !strings.Contains(out, "revoked") {
		t.Errorf("revoke: exit %d %q", code, out)
	}
	if code, _, _ := runCLI(t, e, "token", "revoke", "feeds"); code != exitUsage {
		t.Errorf("second revoke: exit %d, want 2", code)
	}
	if _, err := st.VerifyToken(context.Background(), secret); err == nil {
		t.Error("a revoked token still verifies")
	}
}

func TestAddAndSetNameAndTags(t *testing.T) {
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--name", "Local news", "--tag", "News", "--tag", "local"); code != exitOK {
		t.Fatalf("add: %d %s", code, errOut)
	}
	p, err := st.Page(context.Background(), 1)
	if err != nil || p.Name != "Local news" || strings.Join(p.Tags, ",") != "local,news" {
		t.Fatalf("added %+v %v", p, err)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.2:9/", "--tag", "a b"); code != exitUsage || !strings.Contains(errOut, "letters, digits") {
		t.Errorf("add with a bad tag: exit %d %q, want 2", code, errOut)
	}
	if code, out, errOut := runCLI(t, e, "set", "1", "--clear-tags", "--name", ""); code != exitOK || !strings.Contains(out, `tags []`) {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	p, _ = st.Page(context.Background(), 1)
	if p.Name != "" || len(p.Tags) != 0 {
		t.Errorf("after set: %+v", p)
	}
	if pages, _ := st.Pages(context.Background()); len(pages) != 1 {
		t.Errorf("%d pages, want 1: the refused add wrote", len(pages))
	}
}

func TestImportWritesNothingWhenAnyRowIsBadAndExportRoundTrips(t *testing.T) {
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("url,name,tags,interval\n"+
		"http://127.0.0.1:9/a,A,x y,1m\n"+
		"ftp://127.0.0.1/,B,,\n"+
		"http://127.0.0.1:9/c,C,,1s\n"+
		"http://127.0.0.1:9/a,A again,,\n"+
		"http://127.0.0.1:9/e,E,,soon\n"), 0o600)
	code, out, errOut := runCLI(t, e, "import", bad)
	for _, want := range []string{"row 3:", `scheme "ftp"`, "row 4:", "too short", "row 5:", "also on row 2", "row 6:", `interval "soon"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("import of a bad list: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code != exitUsage || out != "" {
		t.Errorf("import of a bad list: exit %d, stdout %q; want 2 and nothing", code, out)
	}
	if pages, _ := st.Pages(context.Background()); len(pages) != 0 {
		t.Fatalf("a refused import wrote %d pages", len(pages))
	}

	good := filepath.Join(dir, "good.opml")
	os.WriteFile(good, []byte(`<?xml version="1.0"?><opml version="2.0"><head/><body>
		<outline text="Politics"><outline text="Daily" type="link" url="http://127.0.0.1:9/daily" category="/local"/></outline>
		<outline text="Weekly" htmlUrl="http://127.0.0.1:9/weekly" pwEnabled="false"/></body></opml>`), 0o600)
	if code, out, errOut := runCLI(t, e, "import", good); code != exitOK || !strings.Contains(out, "2 new pages") {
		t.Fatalf("import OPML: %d %q %q", code, out, errOut)
	}
	pages, _ := st.Pages(context.Background())
	if len(pages) != 2 || pages[0].Name != "Daily" || strings.Join(pages[0].Tags, ",") != "local,politics" || pages[1].Enabled {
		t.Fatalf("imported %+v", pages)
	}
	if code, _, errOut := runCLI(t, e, "import", good); code != exitUsage || !strings.Contains(errOut, "already watched") {
		t.Errorf("second import: exit %d %q, want 2 naming the watched pages", code, errOut)
	}

	// The export carries regions, keyword rules, burst detection and articles.
	within, exclude, includeText, excludeURL := []string{"#latest-news"}, []string{"nav, footer"}, []string{"florenz|rom"}, []string{`\?ticker=`}
	off := false
	if _, err := st.EditPage(context.Background(), pages[0].ID, watch.PageEdit{Within: &within, Exclude: &exclude,
		IncludeText: &includeText, ExcludeURL: &excludeURL, BurstDetection: &off, Articles: &off}); err != nil {
		t.Fatal(err)
	}
	pages, _ = st.Pages(context.Background())

	for _, format := range []string{"csv", "opml"} {
		code, out, _ := runCLI(t, e, "export", "--format", format)
		if code != exitOK {
			t.Fatalf("export %s: exit %d", format, code)
		}
		file := filepath.Join(dir, "export."+format)
		os.WriteFile(file, []byte(out), 0o600)
		e2, st2 := migrated(t)
		e2["PORTALWATCH_ALLOW_PRIVATE"] = "true"
		if code, _, errOut := runCLI(t, e2, "import", file); code != exitOK {
			t.Fatalf("import of the %s export: %d %s\n%s", format, code, errOut, out)
		}
		again, _ := st2.Pages(context.Background())
		for i := range pages {
			a, b := pages[i], again[i]
			if a.BaseURL != b.BaseURL || a.Name != b.Name || strings.Join(a.Tags, ",") != strings.Join(b.Tags, ",") || a.Enabled != b.Enabled || a.Interval != b.Interval ||
				!reflect.DeepEqual(a.Options, b.Options) || a.BurstDetection != b.BurstDetection || a.Articles != b.Articles {
				t.Errorf("%s round trip: %+v became %+v", format, a, b)
			}
		}
	}
}

func TestImportRefusesBadRegionsAndKeywordRulesAndWritesNothing(t *testing.T) {
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("url,within,exclude,include_url,burst_detection\n"+
		"http://127.0.0.1:9/a,#latest-news,nav,/politik/,false\n"+
		"http://127.0.0.1:9/b,div:has(a),,,\n"+
		"http://127.0.0.1:9/c,,,(,\n"+
		"http://127.0.0.1:9/d,,,,maybe\n"), 0o600)
	code, out, errOut := runCLI(t, e, "import", bad)
	for _, want := range []string{"row 3:", ":has", "row 4:", "missing closing", "row 5:", `burst_detection "maybe"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("import of a bad list: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code != exitUsage || out != "" {
		t.Errorf("import of a bad list: exit %d, stdout %q; want 2 and nothing", code, out)
	}
	if pages, _ := st.Pages(context.Background()); len(pages) != 0 {
		t.Fatalf("a refused import wrote %d pages", len(pages))
	}
}
