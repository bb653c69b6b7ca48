package redisconn

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		url       string
		kind      Kind
		addrs     []string // the nodes the client is given
		master    string
		db        int
		user, pw  string
		sentinelP string
	}{
		{url: "redis://:pw@127.0.0.1:6379/3", kind: Single, addrs: []string{"127.0.0.1:6379"}, db: 3, pw: "pw"},
		{url: "redis+sentinel://app:pw@s1,s2:26380,[::1]:26381/mymaster/2?sentinel_password=spw",
			kind: Sentinel, addrs: []string{"s1:26379", "s2:26380", "[::1]:26381"}, master: "mymaster", db: 2,
			user: "app", pw: "pw", sentinelP: "spw"},
		{url: "redis+cluster://:p%40ss@n1:7000,n2", kind: Cluster, addrs: []string{"n1:7000", "n2:6379"}, pw: "p@ss"},
	}
	for _, tt := range tests {
		tg, err := Parse(tt.url)
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.url, err)
			continue
		}
		if tg.Kind != tt.kind {
			t.Errorf("Parse(%s).Kind = %d, want %d", tt.url, tg.Kind, tt.kind)
		}
		var addrs []string
		var master, user, pw, sentinelPw string
		var db int
		switch tg.Kind {
		case Single:
			addrs, db, user, pw = []string{tg.single.Addr}, tg.single.DB, tg.single.Username, tg.single.Password
		case Sentinel:
			o := tg.failover
			addrs, master, db, user, pw, sentinelPw = o.SentinelAddrs, o.MasterName, o.DB, o.Username, o.Password, o.SentinelPassword
		case Cluster:
			addrs, user, pw = tg.cluster.Addrs, tg.cluster.Username, tg.cluster.Password
		}
		if strings.Join(addrs, " ") != strings.Join(tt.addrs, " ") || master != tt.master || db != tt.db ||
			user != tt.user || pw != tt.pw || sentinelPw != tt.sentinelP {
			t.Errorf("Parse(%s) = addrs %v master %q db %d user %q password %q sentinel password %q, want %v %q %d %q %q %q",
				tt.url, addrs, master, db, user, pw, sentinelPw, tt.addrs, tt.master, tt.db, tt.user, tt.pw, tt.sentinelP)
		}
	}
}

// The timeouts of Open bound every round trip and nothing retries, whatever
// the URL asked for.
func TestOpenSetsTimeoutsAndNoRetries(t *testing.T) {
	for _, raw := range []string{
		"redis://127.0.0.1:1/0?max_retries=5",
		"redis+sentinel://127.0.0.1:1/mymaster?max_retries=5",
		"redis+cluster://127.0.0.1:1?max_retries=5",
	} {
		c, err := Open(raw, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var timeout time.Duration
		var retries int
		switch c := c.(type) {
		case *redis.Client:
			timeout, retries = c.Options().ReadTimeout, c.Options().MaxRetries
		case *redis.ClusterClient:
			timeout, retries = c.Options().ReadTimeout, c.Options().MaxRetries
		default:
			t.Fatalf("Open(%s) = %T", raw, c)
		}
		c.Close()
		// go-redis reads -1 (no retries) as 0 once the client is made.
		if timeout != 300*time.Millisecond || retries > 0 {
			t.Errorf("Open(%s): read timeout %v, max retries %d; want 300ms and none", raw, timeout, retries)
		}
	}
}

func TestErrorsNeverQuoteThePassword(t *testing.T) {
	for _, raw := range []string{
		"redis://:s3cr3t@cache:63x9/0",
		"redis://:s3cr3t@a:1,b:2/0",
		"redis+sentinel://:s3cr3t@s1:26379",
		"redis+sentinel://:s3cr3t@s1:26379/m/zero",
		"redis+cluster://:s3cr3t@n1:7000?bogus=1",
		"redis+cluster://:s3cr3t@n1:70x0",
		"redis+cluster://:s3cr3t@n1:7000,n2:99999",
		"redis+cluster://:s3cr3t@n1:7000?addr=n2:7001",
		"redis+sentinel://:s3cr3t@s1,::1/mymaster",
	} {
		_, err := Parse(raw)
		if err == nil {
			t.Errorf("Parse(%s) accepted", raw)
		} else if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Parse(%s): %v quotes the password", raw, err)
		}
	}
}
