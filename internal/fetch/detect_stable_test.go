package fetch

import (
	"os"
	"testing"
)

func TestDetectionIsDeterministic(t *testing.T) {
	body, err := os.ReadFile("../../../shared/corpus/pages/wpull__mojibake.html")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("corpus absent: %v", err)
	}
	_, first := DecodeHTML(body, "")
	for range 300 {
		if _, got := DecodeHTML(body, ""); got != first {
			t.Fatalf("the same bytes decoded as %s and as %s", first, got)
		}
	}
}
