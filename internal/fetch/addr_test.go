package fetch

import (
	"net/netip"
	"strings"
	"testing"
)

func TestIsPublic(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
		reason string // a substring of the refusal reason
	}{
		// Public examples.
		{"8.8.8.8", true, ""},
		{"1.1.1.1", true, ""},
		{"93.184.216.34", true, ""},
		{"2606:4700::1111", true, ""},
		{"2001:4860:4860::8888", true, ""},
		{"::ffff:8.8.8.8", true, ""},
		{"64:ff9b::808:808", true, ""},          // NAT64 of 8.8.8.8
		{"2002:808:808::1", true, ""},           // 6to4 of 8.8.8.8
		{"2001:0:808:808::f7f7:f7f7", true, ""}, // Teredo: server 8.8.8.8, client 8.8.8.8
		{"100.63.255.255", true, ""},            // just below CGNAT
		{"100.128.0.0", true, ""},               // just above CGNAT
		{"172.15.255.255", true, ""},            // just below 172.16/12
		{"172.32.0.0", true, ""},                // just above
		{"198.17.255.255", true, ""},            // just below 198.18/15
		{"198.20.0.0", true, ""},                // just above
		{"223.255.255.255", true, ""},           // just below multicast

		// IPv4.
		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "this network"},
		{"10.0.0.1", false, "private"},
		{"10.255.255.255", false, "private"},
		{"172.16.0.1", false, "private"},
		{"172.31.255.255", false, "private"},
		{"192.168.1.1", false, "private"},
		{"100.64.0.1", false, "carrier-grade NAT"},
		{"100.127.255.255", false, "carrier-grade NAT"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.255.254", false, "loopback"},
		{"169.254.169.254", false, "link-local"},
		{"192.0.0.1", false, "IETF protocol"},
		{"192.0.2.1", false, "documentation"},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"192.88.99.1", false, "6to4 relay"},
		{"198.18.0.1", false, "benchmarking"},
		{"198.19.255.255", false, "benchmarking"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"240.0.0.1", false, "reserved"},
		{"255.255.255.255", false, "broadcast"},

		// IPv6.
		{"::", false, "unspecified"},
		{"::1", false, "loopback"},
		{"::ffff:127.0.0.1", false, "loopback"}, // IPv4-mapped
		{"::ffff:10.1.2.3", false, "private"},
		{"::ffff:169.254.169.254", false, "link-local"},
		{"::127.0.0.1", false, "reserved IPv6"}, // deprecated IPv4-compatible
		{"fc00::1", false, "unique local"},
		{"fd12:3456::1", false, "unique local"},
		{"fe80::1", false, "link-local"},
		{"fe80::1%eth0", false, "link-local"},
		{"febf::1", false, "link-local"},
		{"fec0::1", false, "site-local"},
		{"ff02::1", false, "multicast"},
		{"64:ff9b::7f00:1", false, "NAT64 address wrapping 127.0.0.1, a loopback"},
		{"64:ff9b::a9fe:a9fe", false, "NAT64 address wrapping 169.254.169.254"},
		{"64:ff9b:1::1", false, "local-use NAT64"},
		{"2002:7f00:1::1", false, "6to4 address wrapping 127.0.0.1"},
		{"2002:a00:1::", false, "6to4 address wrapping 10.0.0.1"},
		{"2001:0:7f00:1::", false, "Teredo address wrapping 127.0.0.1"},           // server
		{"2001:0:808:808::3fff:fffe", false, "Teredo address wrapping 192.0.0.1"}, // client, inverted
		{"2001:db8::1", false, "documentation"},
		{"3fff::1", false, "documentation"},
		{"2001:2::1", false, "benchmarking"},
		{"2001:10::1", false, "ORCHID"},
		{"2001:20::1", false, "ORCHID"},
		{"100::1", false, "reserved IPv6"}, // discard-only
		{"4000::1", false, "reserved IPv6"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			if got := IsPublic(a); got != tt.public {
				t.Fatalf("IsPublic(%s) = %v, want %v (reason %q)", tt.addr, got, tt.public, nonPublicReason(a))
			}
			if r := nonPublicReason(a); !strings.Contains(r, tt.reason) {
				t.Errorf("reason for %s = %q, want it to contain %q", tt.addr, r, tt.reason)
			}
		})
	}
	if IsPublic(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}
