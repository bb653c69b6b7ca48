package watch

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalizeRenderAllow(t *testing.T) {
	got, err := NormalizeRenderAllow([]string{" CDN.Example.com. ", "api.example.com:8443", "cdn.example.com", "", "static_1.example.org"})
	if want := []string{"cdn.example.com", "api.example.com:8443", "static_1.example.org"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if got, err := NormalizeRenderAllow(nil); got != nil || err != nil {
		t.Fatalf("no hosts: %q, %v", got, err)
	}
	if got, err := NormalizeRenderAllow(SplitRenderAllow("")); got != nil || err != nil {
		t.Fatalf(`"" typed: %q, %v; want none`, got, err)
	}
	for _, tt := range []struct{ entry, want string }{
		{"https://cdn.example.com", "without a scheme"},
		{"cdn.example.com/lib", "without a path"},
		{"user@cdn.example.com", "without user info"},
		{"*.example.com", "wildcards are not allowed"},
		{"10.0.0.1", "an IP address is not allowed"},
		{"127.1", "an IP address is not allowed"},
		{"0x7f.1", "an IP address is not allowed"},
		{"[::1]:80", "an IP address is not allowed"},
		{"::1", "an IP address is not allowed"},
		{"cdn.example.com:0", `port "0" is not a number from 1 to 65535`},
		{"cdn.example.com:http", `port "http"`},
		{"cdn.example.com:080", `port "080"`},
		{"cdn..example.com", "each part between dots"},
		{"-cdn.example.com", "inner hyphen"},
		{"bücher.example", "xn--"},
		{":8080", "no host"},
	} {
		_, err := NormalizeRenderAllow([]string{tt.entry})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "render-allow") {
			t.Errorf("%q: %v, want %q", tt.entry, err, tt.want)
		}
	}
	many := make([]string, MaxRenderAllow+1)
	for i := range many {
		many[i] = "h" + strings.Repeat("x", i) + ".example"
	}
	if _, err := NormalizeRenderAllow(many); err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Errorf("21 hosts: %v", err)
	}
	if _, err := NormalizeRenderAllow(many[:MaxRenderAllow]); err != nil {
		t.Errorf("20 hosts: %v", err)
	}
}

func TestSplitRenderAllow(t *testing.T) {
	got := SplitRenderAllow("a.example, b.example  c.example", "d.example,,")
	if want := []string{"a.example", "b.example", "c.example", "d.example"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A spec and an edit carry the field's refusal under render_allow.
func TestRenderAllowRefusedByField(t *testing.T) {
	_, err := PageSpec{URL: "https://news.example/", RenderAllow: []string{"10.1.2.3"}}.Normalize()
	if rs := RefusalsOf(err); len(rs) != 1 || rs[0].Field != "render_allow" {
		t.Fatalf("spec: %v", err)
	}
	hosts := []string{"CDN.example"}
	e, err := PageEdit{RenderAllow: &hosts}.Normalize()
	if err != nil || !slices.Equal(*e.RenderAllow, []string{"cdn.example"}) {
		t.Fatalf("edit: %v, %v", e.RenderAllow, err)
	}
	none := []string{}
	if e, err := (PageEdit{RenderAllow: &none}).Normalize(); err != nil || e.RenderAllow == nil || len(*e.RenderAllow) != 0 {
		t.Fatalf("an edit clearing the list: %v, %v", e.RenderAllow, err)
	}
}
