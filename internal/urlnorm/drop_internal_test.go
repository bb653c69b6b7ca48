package urlnorm

import (
	"strings"
	"testing"
)

// TestDropNamesTable checks the table behind dropParam: every name is lower
// case (dropParam lowers the name before the lookup), fits the lookup buffer,
// and is not already covered by a prefix.
func TestDropNamesTable(t *testing.T) {
	for name := range dropNames {
		if name != strings.ToLower(name) {
			t.Errorf("dropNames has %q, which is not lower case", name)
		}
		if len(name) > maxDropName {
			t.Errorf("dropNames has %q, longer than maxDropName %d: it would never match", name, maxDropName)
		}
		for _, p := range dropPrefixes {
			if strings.HasPrefix(name, p) {
				t.Errorf("dropNames has %q, already removed by the prefix %q", name, p)
			}
		}
		if !dropParam([]byte(strings.ToUpper(name))) {
			t.Errorf("dropParam(%q) = false", strings.ToUpper(name))
		}
	}
	for _, p := range dropPrefixes {
		if p != strings.ToLower(p) {
			t.Errorf("dropPrefixes has %q, which is not lower case", p)
		}
	}
}
