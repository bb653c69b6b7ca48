package crawler

import (
	"testing"

	"github.com/goccy/go-json"
)

// quotedLen must never undercount what the encoder writes, or a task could
// pass its budget.
func TestQuotedLen(t *testing.T) {
	for _, s := range []string{"", "abc", `"\`, "\n\r\t\b\f\x00\x1f\x7f", "<&>", "café", "\u2028\u2029", "caf\xe9\xff", "日本"} {
		b, err := json.MarshalWithOption(s, json.DisableHTMLEscape())
		if err != nil {
			t.Fatal(err)
		}
		if got := quotedLen(s); got < len(b) {
			t.Errorf("quotedLen(%q) = %d, under the %d bytes written (%s)", s, got, len(b), b)
		}
	}
}
