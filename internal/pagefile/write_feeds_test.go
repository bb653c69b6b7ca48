package pagefile

import (
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestFeedName: a feed is named after its page and its own title, and
// no name is said twice.
func TestFeedName(t *testing.T) {
	for _, c := range []struct{ page, title, want string }{
		{"Ministry of Health", "Press releases", "Ministry of Health — Press releases"},
		{"Ministry of Health", "", "Ministry of Health"},
		{"Ministry of Health", "health", "Ministry of Health"},
		{"Ministry of Health", "Ministry of Health news", "Ministry of Health news"},
		{"example.org", "Example", "example.org"},
		{"example.org", "Top stories", "example.org — Top stories"},
	} {
		if got := feedName(watch.PageFeed{PageName: c.page, Title: c.title}); got != c.want {
			t.Errorf("feed %q of page %q is named %q, want %q", c.title, c.page, got, c.want)
		}
	}
}
