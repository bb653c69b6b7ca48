// Package redisconn turns a REDIS_URL into a go-redis client for one
// server, a Sentinel-managed primary or a Redis Cluster, so that seen and
// hostgate reach all three through one redis.UniversalClient:
//
//	redis://[user:password@]host:6379/0       one server (rediss:// for TLS)
//	unix://[user:password@]/path/redis.sock?db=0
//	redis+sentinel://[user:password@]host1:26379,host2:26379/mymaster[/db]
//	redis+cluster://[user:password@]host1:7000,host2:7001
//
// rediss+sentinel:// and rediss+cluster:// use TLS. The user and password
// are the data servers' (the primary's and replicas', or the cluster
// nodes'); Sentinels that require their own password take it in the
// sentinel_username and sentinel_password query parameters. A port left out
// is 26379 for a Sentinel and 6379 for a cluster node. The other query
// parameters are go-redis's own (dial_timeout, pool_size, ...; see
// redis.ParseURL, ParseFailoverURL and ParseClusterURL), except the timeouts
// and retries that Open sets. A cluster URL needs only some of the nodes:
// the client learns the others from them.
package redisconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is the shape of the Redis installation a URL names.
type Kind int

// The kinds of installation.
const (
	Single   Kind = iota // one server (redis://, rediss://, unix://)
	Sentinel             // a primary found through Sentinels (redis+sentinel://)
	Cluster              // a Redis Cluster (redis+cluster://)
)

// Default ports of the nodes a URL lists without one.
const (
	DefaultSentinelPort = "26379"
	DefaultClusterPort  = "6379"
)

// Target is a parsed REDIS_URL. Its zero value is not usable: call Parse.
type Target struct {
	Kind     Kind
	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

// Parse reads a REDIS_URL of any of the forms in the package comment. Its
// errors never quote the URL (it may hold a password): the caller names the
// setting and shows the URL redacted.
func Parse(raw string) (*Target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("want a URL starting with redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://")
	}
	base, kind, found := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" && !(base == "unix" && !found) {
		return nil, fmt.Errorf("scheme %q: want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster", scheme)
	}
	switch {
	case !found:
		return parseSingle(raw, rest)
	case kind == "sentinel":
		return parseSentinel(base, rest)
	case kind == "cluster":
		return parseCluster(base, rest)
	}
	return nil, fmt.Errorf("scheme %q: want %s+sentinel or %s+cluster", scheme, base, base)
}

func parseSingle(raw, rest string) (*Target, error) {
	if auth, _ := splitAuthority(rest); strings.Contains(auth, ",") {
		return nil, errors.New("lists several hosts: name one server, or use redis+sentinel:// or redis+cluster://")
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, withoutURL(err)
	}
	return &Target{Kind: Single, single: opts}, nil
}

// parsed is the parts of a multi-host URL: url.Parse rejects a list of
// hosts (and IPv6 addresses in one), so the authority is split here and
// the rest parsed with a single placeholder host.
type parsed struct {
	user  *url.Userinfo
	hosts []string
	path  []string
	query url.Values
}

func splitAuthority(rest string) (authority, tail string) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return rest, ""
	}
	return rest[:end], rest[end:]
}

func parseMulti(rest, defaultPort string) (parsed, error) {
	authority, tail := splitAuthority(rest)
	var p parsed
	hostList := authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		u, err := url.Parse("redis://" + authority[:at+1] + "placeholder")
		if err != nil {
			return p, fmt.Errorf("user information: %v", withoutURL(err))
		}
		p.user, hostList = u.User, authority[at+1:]
	}
	for i, h := range strings.Split(hostList, ",") {
		if h == "" {
			return p, fmt.Errorf("host %d is empty: separate hosts with single commas", i+1)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: the default one. An IPv6 address needs brackets.
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
			if strings.Contains(host, "[") || strings.Contains(host, "]") || (strings.Contains(host, ":") && !strings.HasPrefix(h, "[")) {
				return p, fmt.Errorf("host %d %q: want host:port, with an IPv6 address in brackets", i+1, h)
			}
		}
		if host == "" {
			return p, fmt.Errorf("host %d %q has no name", i+1, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return p, fmt.Errorf("host %d %q: the port must be a number from 1 to 65535", i+1, h)
		}
		p.hosts = append(p.hosts, net.JoinHostPort(host, port))
	}
	u, err := url.Parse("redis://placeholder" + tail)
	if err != nil {
		return p, withoutURL(err)
	}
	if u.Fragment != "" {
		return p, errors.New("a fragment (#...) means nothing in a Redis URL")
	}
	p.path = strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	p.query = u.Query()
	if p.query.Has("addr") {
		return p, errors.New("list every host before the path, separated by commas, not in addr parameters")
	}
	return p, nil
}

// goRedisURL is the URL go-redis's own parsers take: the first host, the
// others as addr parameters, and the query given. Credentials are set on
// the options afterwards, so no go-redis error can quote them.
func (p parsed) goRedisURL(scheme, path string) string {
	q := url.Values{}
	for k, v := range p.query {
		q[k] = v
	}
	for _, h := range p.hosts[1:] {
		q.Add("addr", h)
	}
	u := url.URL{Scheme: scheme, Host: p.hosts[0], Path: path, RawQuery: q.Encode()}
	return u.String()
}

func parseSentinel(scheme, rest string) (*Target, error) {
	p, err := parseMulti(rest, DefaultSentinelPort)
	if err != nil {
		return nil, err
	}
	if len(p.path) == 0 || len(p.path) > 2 {
		return nil, errors.New("want the primary's name after the hosts, as in redis+sentinel://host1:26379,host2:26379/mymaster/0")
	}
	if p.query.Has("master_name") {
		return nil, errors.New("name the primary in the path (/mymaster), not with master_name")
	}
	p.query.Set("master_name", p.path[0])
	db := "/"
	if len(p.path) == 2 {
		db += p.path[1]
	}
	sentinelUser, sentinelPassword := p.query.Get("sentinel_username"), p.query.Get("sentinel_password")
	p.query.Del("sentinel_username")
	p.query.Del("sentinel_password")
	opts, err := redis.ParseFailoverURL(p.goRedisURL(scheme, db))
	if err != nil {
		return nil, withoutURL(err)
	}
	opts.SentinelUsername, opts.SentinelPassword = sentinelUser, sentinelPassword
	if p.user != nil {
		opts.Username = p.user.Username()
		opts.Password, _ = p.user.Password()
	}
	return &Target{Kind: Sentinel, failover: opts}, nil
}

func parseCluster(scheme, rest string) (*Target, error) {
	p, err := parseMulti(rest, DefaultClusterPort)
	if err != nil {
		return nil, err
	}
	if len(p.path) > 1 || (len(p.path) == 1 && p.path[0] != "0") {
		return nil, errors.New("a Redis Cluster has database 0 only: leave the path out")
	}
	opts, err := redis.ParseClusterURL(p.goRedisURL(scheme, ""))
	if err != nil {
		return nil, withoutURL(err)
	}
	if p.user != nil {
		opts.Username = p.user.Username()
		opts.Password, _ = p.user.Password()
	}
	return &Target{Kind: Cluster, cluster: opts}, nil
}

// Open returns a client for t whose every round trip (dial, read, write)
// is bounded by timeout and never retried: portalwatch's Redis is a cache
// and a coordinator, so a command that fails is answered without Redis
// (a cache miss, a per-process rule) rather than waited for. A cluster
// client still follows MOVED and ASK redirections (go-redis's MaxRedirects,
// default 3), so slots moving between nodes cost nothing. Each call returns
// a new client with its own connections; the caller closes it.
func (t *Target) Open(timeout time.Duration) redis.UniversalClient {
	switch t.Kind {
	case Sentinel:
		o := *t.failover
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.MaxRetries, o.DialerRetries = -1, 1
		return redis.NewFailoverClient(&o)
	case Cluster:
		o := *t.cluster
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.MaxRetries, o.DialerRetries = -1, 1
		return redis.NewClusterClient(&o)
	default:
		o := *t.single
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.MaxRetries, o.DialerRetries = -1, 1
		return redis.NewClient(&o)
	}
}

// Open parses raw (see Parse) and opens a client on it (see Target.Open).
func Open(raw string, timeout time.Duration) (redis.UniversalClient, error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return t.Open(timeout), nil
}

// withoutURL drops the URL that net/url quotes, password included, in its
// parse errors, keeping the reason: an error must never carry a credential
// into a log.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
