package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// fakeResolver answers from a fixed table; unknown names fail as DNS does.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	// As a real resolver's answer, naming the resolver's own address.
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.8.7:53", IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestCheckURL(t *testing.T) {
	resolver := fakeResolver{
		"example.com":           addrs("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"),
		"evil.example":          addrs("127.0.0.1"),
		"metadata.example":      addrs("169.254.169.254"),
		"mixed.example":         addrs("93.184.216.34", "10.0.0.5"),
		"rebind6.example":       addrs("::ffff:192.168.0.1"),
		"xn--bcher-kva.example": addrs("93.184.216.35"),
	}
	tests := []struct {
		url  string
		kind Kind   // KindUnknown means accepted
		msg  string // a substring of the error message
	}{
		// Accepted.
		{"https://example.com/", KindUnknown, ""},
		{"http://example.com:8080/path?q=1#frag", KindUnknown, ""},
		{"HTTPS://EXAMPLE.COM/", KindUnknown, ""},
		{"https://bücher.example/", KindUnknown, ""},
		{"http://8.8.8.8/", KindUnknown, ""},
		{"http://[2606:4700::1111]/", KindUnknown, ""},
		{"http://134744072/", KindUnknown, ""}, // 8.8.8.8 in decimal

		// Malformed.
		{"", KindBadURL, "empty URL"},
		{"example.com", KindBadURL, "not an absolute URL"},
		{"example.com:8080/news", KindBadURL, "has no scheme; give one such as https://example.com/"},
		{"/relative/path", KindBadURL, "not an absolute URL"},
		{"//example.com/", KindBadURL, "not an absolute URL"},
		{"file:///etc/passwd", KindBadURL, `scheme "file" is not allowed`},
		{"ftp://example.com/", KindBadURL, `scheme "ftp"`},
		{"javascript:alert(1)", KindBadURL, `scheme "javascript"`},
		{"data:text/html,hi", KindBadURL, `scheme "data"`},
		{"gopher://example.com/", KindBadURL, `scheme "gopher"`},
		{"http:example.com", KindBadURL, "has no host"},
		{"http:///path", KindBadURL, "has no host"},
		{"http://user:secret@example.com/", KindBadURL, "user info"},
		{"http://user@example.com/", KindBadURL, "user info"},
		{`http://127.0.0.1:8080\@example.com/`, KindBadURL, "backslash"},
		{`http://example.com\@127.0.0.1/`, KindBadURL, "backslash"},
		{`http:\\example.com\`, KindBadURL, "backslash"},
		{"http://exa mple.com/", KindBadURL, "whitespace"},
		{" http://example.com/", KindBadURL, "whitespace"},
		{"http://example.com/\n", KindBadURL, "whitespace"},
		{"http://example.com:0/", KindBadURL, "out of range"},
		{"http://example.com:99999/", KindBadURL, "out of range"},
		{"http://%31%32%37.0.0.1/", KindBadURL, "not a valid URL"},
		{"http://1.2.3.4.5/", KindBadURL, "not a valid IPv4"},
		{"http://256.0.0.1/", KindBadURL, "not a valid IPv4"},
		{"http://0x100000000/", KindBadURL, "not a valid IPv4"},
		{"http://1.2.3.09/", KindBadURL, "not a valid IPv4"}, // 09 is bad octal
		{"http://[::1/", KindBadURL, "not a valid URL"},

		// Non-public IP literals in every spelling.
		{"http://127.0.0.1:8080/", KindBlocked,
			"http://127.0.0.1:8080/: resolves to 127.0.0.1, a loopback address; set PORTALWATCH_ALLOW_PRIVATE=true to allow private addresses"},
		{"http://2130706433/", KindBlocked, "resolves to 127.0.0.1, a loopback"},
		{"http://0177.0.0.1/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://0x7f.1/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://0x7F000001/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://017700000001/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://127.1/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://127.0.1/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://127.0.0.1./", KindBlocked, "resolves to 127.0.0.1"},
		{"http://0/", KindBlocked, "resolves to 0.0.0.0, an unspecified"},
		{"http://１２７．０．０．１/", KindBlocked, "resolves to 127.0.0.1"}, // full-width
		{"http://[::1]/", KindBlocked, "resolves to ::1, a loopback"},
		{"http://[::ffff:127.0.0.1]/", KindBlocked, "resolves to 127.0.0.1, a loopback"},
		{"http://[::ffff:7f00:1]/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://[0:0:0:0:0:ffff:127.0.0.1]/", KindBlocked, "resolves to 127.0.0.1"},
		{"http://[fe80::1%25eth0]/", KindBlocked, "link-local"},
		{"http://[fd00::1]/", KindBlocked, "unique local"},
		{"http://[64:ff9b::a9fe:a9fe]/", KindBlocked, "NAT64 address wrapping 169.254.169.254"},
		{"http://169.254.169.254/latest/meta-data/", KindBlocked, "link-local"},
		{"http://10.0.0.1/", KindBlocked, "a private address"},
		{"http://192.168.0.1/", KindBlocked, "a private address"},
		{"http://100.64.0.1/", KindBlocked, "carrier-grade NAT"},

		// Names that resolve to non-public addresses.
		{"http://evil.example/", KindBlocked, "http://evil.example/: resolves to 127.0.0.1, a loopback address; set PORTALWATCH_ALLOW_PRIVATE=true"},
		{"http://metadata.example/", KindBlocked, "resolves to 169.254.169.254, a link-local"},
		{"http://mixed.example/", KindBlocked, "resolves to 10.0.0.5, a private"},
		{"http://rebind6.example/", KindBlocked, "resolves to 192.168.0.1, a private"},
		{"http://nosuch.example/", KindDNS, "cannot resolve nosuch.example: no such host"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := CheckURL(context.Background(), tt.url, false, resolver)
			if tt.kind == KindUnknown {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckURL(%q) = nil, want a %v error", tt.url, tt.kind)
			}
			// Refusals reach people who register pages: never the
			// resolver's address.
			if strings.Contains(err.Error(), "10.9.8.7") {
				t.Errorf("CheckURL(%q) = %v: names the resolver", tt.url, err)
			}
			var fe *Error
			if !errors.As(err, &fe) || fe.Kind != tt.kind {
				t.Fatalf("CheckURL(%q) = %v (kind %v), want kind %v", tt.url, err, KindOf(err), tt.kind)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("CheckURL(%q) = %q, want it to contain %q", tt.url, err, tt.msg)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("message %q is not one line", err)
			}
		})
	}
}

func TestCheckURLAllowPrivate(t *testing.T) {
	private := fakeResolver{"evil.example": addrs("127.0.0.1"), "lan.example": addrs("10.0.0.5", "93.184.216.34")}
	for _, u := range []string{"http://127.0.0.1:8080/", "http://2130706433/", "http://[::1]/", "http://evil.example/",
		"http://10.0.0.1/", "http://lan.example/", "http://localhost:8080/"} {
		if err := CheckURL(context.Background(), u, true, private); err != nil {
			t.Errorf("CheckURL(%q, allowPrivate) = %v, want nil", u, err)
		}
	}
	// A name that does not exist is refused in every mode: allowing
	// private addresses is no reason to watch a typo.
	if err := CheckURL(context.Background(), "http://no-such-host.invalid/", true, private); KindOf(err) != KindDNS {
		t.Errorf("CheckURL(no-such-host.invalid, allowPrivate) = %v, want a dns error", err)
	}
	// Syntax rules hold even with private addresses allowed.
	for _, u := range []string{"file:///etc/passwd", `http://a\@b/`, "http://u@localhost/"} {
		if err := CheckURL(context.Background(), u, true, nil); KindOf(err) != KindBadURL {
			t.Errorf("CheckURL(%q, allowPrivate) = %v, want a bad_url error", u, err)
		}
	}
}

func TestCheckURLLocalhostNames(t *testing.T) {
	// The resolver would call these names public: the names alone are
	// refused, since RFC 6761 resolvers answer them with loopback.
	public := addrs("93.184.216.34")
	resolver := fakeResolver{"localhost": public, "app.localhost": public, "a.b.localhost": public}
	for _, u := range []string{"http://localhost:6379/", "http://LOCALHOST./", "http://app.localhost/", "http://a.b.localhost:8080/x"} {
		err := CheckURL(context.Background(), u, false, resolver)
		if KindOf(err) != KindBlocked || !strings.Contains(err.Error(), "localhost name") || !strings.Contains(err.Error(), allowPrivateHint) {
			t.Errorf("CheckURL(%q) = %v, want blocked as a localhost name", u, err)
		}
		if err := CheckURL(context.Background(), u, true, resolver); err != nil {
			t.Errorf("CheckURL(%q, allowPrivate) = %v, want nil", u, err)
		}
	}
	// Names that merely contain "localhost" are ordinary names.
	resolver["localhost.example"] = public
	resolver["notlocalhost"] = public
	for _, u := range []string{"http://localhost.example/", "http://notlocalhost/"} {
		if err := CheckURL(context.Background(), u, false, resolver); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", u, err)
		}
	}
}

func TestCheckURLNilResolverIsTheSystems(t *testing.T) {
	// A nil resolver once meant "do not resolve", so registration accepted
	// names of loopback hosts. It now means net.DefaultResolver; "localhost"
	// is refused by name before any lookup, so ask for a name /etc/hosts
	// maps to loopback under another spelling.
	if err := CheckURL(context.Background(), "http://127.1/", false, nil); KindOf(err) != KindBlocked {
		t.Errorf("literal with nil resolver: %v, want blocked", err)
	}
	name := loopbackHostsName(t)
	err := CheckURL(context.Background(), "http://"+name+"/", false, nil)
	if KindOf(err) != KindBlocked || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("CheckURL(%s) with nil resolver = %v, want blocked as loopback", name, err)
	}
}

// loopbackHostsName returns a name other than localhost that the system
// resolves to loopback only - the machine's own name, which Debian's
// /etc/hosts maps to 127.0.1.1, or another /etc/hosts alias - or skips the
// test when there is none.
func loopbackHostsName(t *testing.T) string {
	t.Helper()
	self, _ := os.Hostname()
	for _, name := range []string{self, "ip6-localhost", "ip6-loopback", "localhost.localdomain"} {
		if name == "" || isLocalhost(strings.ToLower(name)) {
			continue
		}
		got, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", name)
		if err != nil || len(got) == 0 {
			continue
		}
		loopback := true
		for _, a := range got {
			loopback = loopback && a.Unmap().IsLoopback()
		}
		if loopback {
			return name
		}
	}
	t.Skip("no name other than localhost resolves to loopback here (/etc/hosts)")
	return ""
}

func TestCheckURLRealResolver(t *testing.T) {
	// *net.Resolver satisfies Resolver.
	name := loopbackHostsName(t)
	err := CheckURL(context.Background(), "http://"+name+":8080/", false, net.DefaultResolver)
	if KindOf(err) != KindBlocked || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("CheckURL(%s) = %v, want blocked as loopback", name, err)
	}
}

func TestParseIPv4Browser(t *testing.T) {
	tests := []struct {
		host string
		want string // "" when not an address; "!" when invalid
	}{
		{"example.com", ""},
		{"1.2.3.4", "1.2.3.4"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"0177.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"192.168.257", "192.168.1.1"},
		{"1.2.3.4.", "1.2.3.4"},
		{"0x", "0.0.0.0"},
		{"foo.0x10", "!"},
		{"1.2.3.4.5", "!"},
		{"4294967296", "!"},
		{"99999999999999999999999", "!"},
		{"1.256.1.1", "!"},
		{"08.1.1.1", "!"},
		{"1..1", "!"},
		{"a1", ""},
		{"1a", ""},
		{"xn--1", ""},
		{"0x1g", ""},
	}
	for _, tt := range tests {
		a, ok, err := parseIPv4Browser(tt.host)
		got := ""
		switch {
		case err != nil:
			got = "!"
		case ok:
			got = a.String()
		}
		if got != tt.want {
			t.Errorf("parseIPv4Browser(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// TestRefusalsDoNotRepeatAPassword: a URL refused for its user info once
// came back in the refusal, password and all.
func TestRefusalsDoNotRepeatAPassword(t *testing.T) {
	err := CheckURL(context.Background(), "http://editor:s3cr3t@news.example/", false, fakeResolver{})
	if KindOf(err) != KindBadURL || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "user info") {
		t.Errorf("CheckURL with a password = %v, want a bad_url refusal without the password", err)
	}
}
