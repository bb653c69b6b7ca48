package fetch

import (
	"bytes"
	"strings"
	"testing"

	"github.com/temoto/robotstxt"
)

// sanitized is sanitizeRobots without the counts.
func sanitized(body []byte) []byte {
	b, _ := sanitizeRobots(body)
	return b
}

// wildcardRobots returns a robots.txt of about size bytes whose one group
// is nothing but Disallow rules with stars wildcards each, the costliest
// kind to test a URL against.
func wildcardRobots(size, stars int) []byte {
	rule := "Disallow: /" + strings.Repeat("q*", stars) + "zz\n"
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for b.Len() < size {
		b.WriteString(rule)
	}
	return []byte(b.String())
}

// hostilePath is a long URL path that the rules above almost match.
var hostilePath = "/" + strings.Repeat("qqqqqqqqqz", 25)

// The 494 KiB file of wildcard rules from the review: its rules past the
// caps are dropped, and testing a URL against what is left is cheap.
func TestRobotsHugeWildcardFileIsCapped(t *testing.T) {
	for _, stars := range []int{1, 11} {
		body := wildcardRobots(494<<10, stars)
		clean, cut := sanitizeRobots(body)
		kept := bytes.Count(clean, []byte("Disallow:"))
		total := bytes.Count(body, []byte("Disallow:"))
		if kept > MaxRobotsRules || kept+cut.rules+cut.wildcards != total {
			t.Errorf("%d stars: kept %d rules, cut %+v of %d; want at most %d kept and the rest counted",
				stars, kept, cut, total, MaxRobotsRules)
		}
		// The cost of testing a URL grows with the wildcards kept (about
		// 1 s a test before the caps, 1 ms at worst after, as
		// BenchmarkRobotsTest shows): the caps bound it, and a count
		// cannot flake on a busy machine as a clock would.
		if kept := bytes.Count(clean, []byte("*")) - bytes.Count(clean, []byte("User-agent: *")); kept > MaxRobotsWildcards {
			t.Errorf("%d stars: kept %d wildcards; want at most %d", stars, kept, MaxRobotsWildcards)
		}
		data, err := robotstxt.FromBytes(clean)
		if err != nil {
			t.Fatal(err)
		}
		if !data.FindGroup("portalwatch").Test(hostilePath) {
			t.Errorf("%d stars: the rules kept disallow %s, which none of them matches", stars, hostilePath)
		}
	}
}

// BenchmarkRobotsTest is the cost per fetch of testing a URL against a
// 494 KiB robots.txt of wildcard rules: "uncapped" is every rule, as before
// the caps; "capped" what the caps let through of files of rules with one
// and with eleven wildcards each.
func BenchmarkRobotsTest(b *testing.B) {
	for _, bc := range []struct {
		name  string
		rules []byte
	}{
		{"uncapped", wildcardRobots(494<<10, 11)},
		{"capped_1_star", sanitized(wildcardRobots(494<<10, 1))},
		{"capped_11_stars", sanitized(wildcardRobots(494<<10, 11))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data, err := robotstxt.FromBytes(bc.rules)
			if err != nil {
				b.Fatal(err)
			}
			g := data.FindGroup("portalwatch")
			for b.Loop() {
				g.Test(hostilePath)
			}
		})
	}
}

// BenchmarkRobotsParse is the cost, once per robots.txt TTL, of parsing the
// same file.
func BenchmarkRobotsParse(b *testing.B) {
	body := wildcardRobots(494<<10, 11)
	b.Run("uncapped", func(b *testing.B) {
		for b.Loop() {
			robotstxt.FromBytes(body)
		}
	})
	b.Run("capped", func(b *testing.B) {
		for b.Loop() {
			robotstxt.FromBytes(sanitized(body))
		}
	})
}
