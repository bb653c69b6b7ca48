package main

import (
	"context"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/secrets"
)

// A key changed the documented way: every program gets the new key with
// the old one in PORTALWATCH_SECRETS_OLD_KEYS, `secrets reseal` seals the
// stored values again with the new key, after which the new key alone
// opens them; a value of a key nobody holds is named, not lost.
func TestResealMovesSecretsToTheNewKey(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	const (
		oldKey  = testSecretsKey
		newKey  = "b29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb28="
		lostKey = "cXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXE="
		cookie  = "session=s3cr3t"
	)
	e["PORTALWATCH_SECRETS_KEY"] = oldKey
	for _, u := range []string{"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"} {
		if code, _, errOut := runCLI(t, e, "add", u, "--header", "Cookie: "+cookie, "--header", "Accept-Language: de"); code != exitOK {
			t.Fatalf("add %s: exit %d %q", u, code, errOut)
		}
	}

	e["PORTALWATCH_SECRETS_OLD_KEYS"] = oldKey
	delete(e, "PORTALWATCH_SECRETS_KEY")
	if code, _, errOut := runCLI(t, e, "secrets", "reseal"); code != exitUsage || !strings.Contains(errOut, "without PORTALWATCH_SECRETS_KEY") {
		t.Fatalf("old keys without a key: exit %d %q; want 2 saying so", code, errOut)
	}
	e["PORTALWATCH_SECRETS_KEY"] = newKey
	code, out, errOut := runCLI(t, e, "secrets", "reseal")
	if code != exitOK || !strings.Contains(out, "sealed 2 values again on 2 pages; 0 were sealed with the current key already") {
		t.Fatalf("reseal: exit %d %q %q", code, out, errOut)
	}
	ctx := context.Background()
	only, err := secrets.ParseKey(newKey)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 2; id++ {
		p, err := st.Page(ctx, id)
		if err != nil || len(p.Headers) != 2 {
			t.Fatalf("page %d: %+v, %v", id, p.Headers, err)
		}
		for _, h := range p.Headers {
			if h.Name == "Accept-Language" && (h.Value != "de" || h.Sealed != "") {
				t.Errorf("page %d: header in clear changed: %+v", id, h)
			}
			if h.Name == "Cookie" {
				if v, err := only.Open(id, h.Name, h.Sealed); err != nil || v != cookie {
					t.Errorf("page %d: the new key alone opens %q, %v; want the cookie", id, v, err)
				}
			}
		}
	}
	if code, out, _ := runCLI(t, e, "secrets", "reseal"); code != exitOK || !strings.Contains(out, "sealed 0 values again on 0 pages; 2 were sealed with the current key already") {
		t.Fatalf("reseal again: exit %d %q; want nothing to do", code, out)
	}

	// A value sealed with a key that no program holds any more.
	lost := map[string]string{}
	for k, v := range e {
		lost[k] = v
	}
	lost["PORTALWATCH_SECRETS_KEY"] = lostKey
	delete(lost, "PORTALWATCH_SECRETS_OLD_KEYS")
	if code, _, errOut := runCLI(t, lost, "add", "http://127.0.0.1:9/c", "--header", "Cookie: "+cookie); code != exitOK {
		t.Fatalf("add under another key: exit %d %q", code, errOut)
	}
	code, out, errOut = runCLI(t, e, "secrets", "reseal")
	if code != exitError || !strings.Contains(out, "page 3, header Cookie: ") || !strings.Contains(errOut, "set them again") ||
		strings.Contains(out+errOut, "s3cr3t") {
		t.Fatalf("reseal with a value of a lost key: exit %d %q %q; want 1 naming page 3's cookie", code, out, errOut)
	}
}
