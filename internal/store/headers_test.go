package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// testKey is a fixed key for tests: 32 bytes of "k".
const testKey = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="

func sealer(t *testing.T) *secrets.Key {
	t.Helper()
	k, err := secrets.ParseKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A cookie is stored sealed for its page: the column never holds it in
// clear, the page and its job show it sealed, and the key opens it for that
// page only.
func TestSecretHeadersAreSealedAtRest(t *testing.T) {
	t.Parallel()
	plain, pool := openStore(t)
	key := sealer(t)
	st := plain.WithSealer(key)
	ctx := context.Background()
	const cookie = "session=s3cr3t-cookie-value"
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://members.example/", Headers: []watch.Header{
		{Name: "Accept-Language", Value: "de"}, {Name: "Cookie", Value: cookie}}})
	if err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := pool.QueryRow(ctx, `SELECT headers::text FROM pages WHERE id = $1`, p.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, "s3cr3t") || !strings.Contains(raw, `"Accept-Language"`) || !strings.Contains(raw, `"sealed"`) {
		t.Fatalf("pages.headers = %s: want the cookie sealed, the language in clear", raw)
	}
	for _, h := range p.Headers {
		if h.Name == "Cookie" && (h.Value != "" || h.Sealed == "") {
			t.Fatalf("page shows Cookie %+v: want it sealed", h)
		}
	}
	if got := strings.Join(watch.ShownHeaders(p.Headers), "; "); got != "Accept-Language: de; Cookie: (set)" {
		t.Fatalf("shown headers %q", got)
	}

	var jobs []watch.Job
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, jobs %v", err, jobs)
	}
	body, err := watch.EncodeJob(jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "s3cr3t") {
		t.Fatalf("job holds the cookie in clear: %s", body)
	}
	var sealed string
	for _, h := range jobs[0].Headers {
		if h.Name == "Cookie" {
			sealed = h.Sealed
		}
	}
	if got, err := key.Open(p.ID, "Cookie", sealed); err != nil || got != cookie {
		t.Fatalf("open the job's cookie: %q, %v", got, err)
	}
	if _, err := key.Open(p.ID+1, "Cookie", sealed); err == nil {
		t.Fatal("the sealed cookie opened for another page")
	}
	if _, err := key.Open(p.ID, "Authorization", sealed); err == nil {
		t.Fatal("the sealed cookie opened as another header")
	}
}

// A store without a key refuses a secret header and says how to make one;
// headers in clear need no key.
func TestSecretHeaderWithoutKeyIsRefused(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	_, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://nokey.example/", Headers: []watch.Header{{Name: "Authorization", Value: "Bearer x"}}})
	if !errors.Is(err, watch.ErrNoSecretsKey) || watch.RefusalsOf(err) == nil || !strings.Contains(err.Error(), "openssl rand -base64 32") {
		t.Fatalf("err = %v, want a refusal naming PORTALWATCH_SECRETS_KEY", err)
	}
	if _, err := st.Page(ctx, 1); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("a refused page was stored: %v", err)
	}
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://nokey.example/", Headers: []watch.Header{{Name: "User-Agent", Value: "Mozilla/5.0"}}})
	if err != nil || len(p.Headers) != 1 || p.Headers[0].Value != "Mozilla/5.0" {
		t.Fatalf("page %+v, %v", p.Headers, err)
	}
}

// An edit merges headers by name, keeps a secret it does not name, and
// re-baselines only when a header in clear changes.
func TestEditHeadersMergesAndKeepsSecrets(t *testing.T) {
	t.Parallel()
	plain, pool := openStore(t)
	st := plain.WithSealer(sealer(t))
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://merge.example/", Headers: []watch.Header{{Name: "Cookie", Value: "a=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE pages SET baseline_at = now(), etag = '"x"' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	lang := []watch.Header{{Name: "accept-language", Value: "fr"}}
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Headers: &lang})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(watch.ShownHeaders(p.Headers), "; "); got != "Cookie: (set); Accept-Language: fr" || !p.RebaselinePending {
		t.Fatalf("after the language: %q, rebaseline %t", got, p.RebaselinePending)
	}
	if _, err := pool.Exec(ctx, `UPDATE pages SET rebaseline = false, etag = '"y"' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	// A new cookie and the language as shown: no rebaseline, the validators go.
	change := []watch.Header{{Name: "Cookie", Value: "a=2"}, {Name: "Accept-Language", Value: "fr"}}
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Headers: &change})
	if err != nil {
		t.Fatal(err)
	}
	var etag *string
	if err := pool.QueryRow(ctx, `SELECT etag FROM pages WHERE id = $1`, p.ID).Scan(&etag); err != nil {
		t.Fatal(err)
	}
	if p.RebaselinePending || etag != nil {
		t.Fatalf("a new cookie: rebaseline %t, etag %v; want neither", p.RebaselinePending, etag)
	}
	keep := []watch.Header{{Name: "Cookie", Value: watch.SecretShown}, {Name: "Accept-Language", Value: ""}}
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Headers: &keep})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(watch.ShownHeaders(p.Headers), "; "); got != "Cookie: (set)" {
		t.Fatalf("after removing the language: %q", got)
	}
	if v, err := sealer(t).Open(p.ID, "Cookie", p.Headers[0].Sealed); err != nil || v != "a=2" {
		t.Fatalf("the kept cookie opens as %q, %v", v, err)
	}
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{ClearHeaders: true})
	if err != nil || p.Headers != nil {
		t.Fatalf("cleared: %+v, %v", p.Headers, err)
	}
	var isNull bool
	if err := pool.QueryRow(ctx, `SELECT headers IS NULL FROM pages WHERE id = $1`, p.ID).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("pages.headers after clear: null %t, %v", isNull, err)
	}
}
