package web

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestAPIImportAndExportCarryRegionsAndKeywordRules: the API's import
// refuses a list with a bad selector or pattern whole, and what its export
// writes imports back to the same options.
func TestAPIImportAndExportCarryRegionsAndKeywordRules(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := "url,within,exclude_text\nhttp://127.0.0.1:9/a,#latest-news,\nhttp://127.0.0.1:9/b,main >,\nhttp://127.0.0.1:9/c,,(\n"
	resp, b := e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, bad)
	p := decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 2 || p.Errors[0].Row != 3 || p.Errors[1].Row != 4 {
		t.Fatalf("import of bad options: %d %+v, want 422 naming rows 3 and 4", resp.StatusCode, p)
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("a refused import wrote %d pages", n)
	}

	good := "url,same_site,within,exclude,include_text,exclude_text,include_url,exclude_url,burst_detection,articles\n" +
		"http://127.0.0.1:9/a,true,\"#latest-news\nmain .teasers\",nav,florenz,anzeige,/politik/,\\?ticker=,false,false\n" +
		"http://127.0.0.1:9/b,,,,,,,,,\n"
	if resp, b := e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, good); resp.StatusCode != 201 {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
	want := watch.LinkOptions{SameSiteOnly: true, Ignore: []string{}, Within: []string{"#latest-news", "main .teasers"},
		Exclude: []string{"nav"}, IncludeText: []string{"florenz"}, ExcludeText: []string{"anzeige"},
		IncludeURL: []string{"/politik/"}, ExcludeURL: []string{`\?ticker=`}}
	pages, err := e.st.Pages(ctx)
	if err != nil || len(pages) != 2 || !reflect.DeepEqual(pages[0].Options, want) || pages[0].BurstDetection || !pages[1].BurstDetection ||
		pages[0].Articles || !pages[1].Articles {
		t.Fatalf("imported %+v %v; want the first with %+v, burst detection and articles off", pages, err, want)
	}

	for _, format := range []string{"csv", "opml"} {
		resp, exported := e.do("GET", "/api/v1/pages/export?format="+format, e.readTok, "")
		if resp.StatusCode != 200 {
			t.Fatalf("export %s: %d", format, resp.StatusCode)
		}
		e2 := newEnv(t)
		ct := map[string]string{"csv": "text/csv", "opml": "text/x-opml"}[format]
		if resp, b := e2.do("POST", "/api/v1/pages/import", e2.writeTk, string(exported), "Content-Type", ct); resp.StatusCode != 201 {
			t.Fatalf("import of the %s export: %d %s\n%s", format, resp.StatusCode, b, exported)
		}
		again, _ := e2.st.Pages(ctx)
		for i := range pages {
			if !reflect.DeepEqual(pages[i].Options, again[i].Options) || pages[i].BurstDetection != again[i].BurstDetection ||
				pages[i].Articles != again[i].Articles {
				t.Errorf("%s round trip: %+v (burst %t) became %+v (burst %t)", format, pages[i].Options, pages[i].BurstDetection,
					again[i].Options, again[i].BurstDetection)
			}
		}
		if format == "csv" && (!strings.Contains(string(exported), "burst_detection") || !strings.Contains(string(exported), ",articles")) {
			t.Errorf("the CSV export has no burst_detection or articles column:\n%s", exported)
		}
		if format == "opml" && !strings.Contains(string(exported), `pwArticles="false"`) {
			t.Errorf("the OPML export does not say the first page reads no articles:\n%s", exported)
		}
	}
}
