package fetch

import (
	"net/netip"
)

// IsPublic reports whether addr is a globally reachable unicast address that
// the crawler may connect to. IPv4-mapped IPv6 addresses are unmapped first
// and zones are ignored.
//
// It rejects, for IPv4: 0.0.0.0/8 ("this network", including the unspecified
// address), 10/8, 172.16/12 and 192.168/16 (RFC 1918), 100.64/10 (carrier-grade
// NAT), 127/8 (loopback), 169.254/16 (link-local, where cloud metadata
// services live), 192.0.0/24 (IETF protocol assignments), 192.0.2/24,
// 198.51.100/24 and 203.0.113/24 (documentation), 192.88.99/24 (6to4 relay
// anycast), 198.18/15 (benchmarking), 224/4 (multicast) and 240/4 (reserved,
// including the broadcast address 255.255.255.255).
//
// For IPv6 it accepts only 2000::/3 (global unicast) and rejects within it
// 2001:db8::/32 and 3fff::/20 (documentation), 2001:2::/48 (benchmarking),
// 2001:10::/28 and 2001:20::/28 (ORCHID), and the tunnelling prefixes
// 2002::/16 (6to4) and 2001::/32 (Teredo) when the IPv4 address they embed is
// not public. Outside 2000::/3 it accepts only 64:ff9b::/96 (NAT64) with a
// public embedded IPv4 address; everything else there (::1 loopback, ::
// unspecified, fc00::/7 unique local, fe80::/10 link-local, fec0::/10
// site-local, ff00::/8 multicast, 64:ff9b:1::/48 local NAT64, 100::/64
// discard) is rejected. The zero Addr is not public.
func IsPublic(addr netip.Addr) bool {
	return nonPublicReason(addr) == ""
}

// nonPublicReason returns why addr is not public, as a noun phrase such as
// "a loopback address", or "" when addr is public. IsPublic and the error
// messages share it so that the rule and its explanation cannot drift apart.
func nonPublicReason(addr netip.Addr) string {
	if !addr.IsValid() {
		return "an invalid address"
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return nonPublicReason4(addr.As4())
	}
	return nonPublicReason6(addr.As16())
}

func nonPublicReason4(a [4]byte) string {
	switch {
	case a == [4]byte{}:
		return "an unspecified address"
	case a[0] == 0:
		return `a "this network" address (0.0.0.0/8)`
	case a[0] == 127:
		return "a loopback address"
	case a[0] == 10,
		a[0] == 172 && a[1]&0xf0 == 16,
		a[0] == 192 && a[1] == 168:
		return "a private address"
	case a[0] == 100 && a[1]&0xc0 == 64:
		return "a carrier-grade NAT address (100.64.0.0/10)"
	case a[0] == 169 && a[1] == 254:
		return "a link-local address (169.254.0.0/16, where cloud metadata services live)"
	case a[0] == 192 && a[1] == 0 && a[2] == 0:
		return "an IETF protocol assignment address (192.0.0.0/24)"
	case a[0] == 192 && a[1] == 0 && a[2] == 2,
		a[0] == 198 && a[1] == 51 && a[2] == 100,
		a[0] == 203 && a[1] == 0 && a[2] == 113:
		return "a documentation address"
	case a[0] == 192 && a[1] == 88 && a[2] == 99:
		return "a 6to4 relay anycast address (192.88.99.0/24)"
	case a[0] == 198 && a[1]&0xfe == 18:
		return "a benchmarking address (198.18.0.0/15)"
	case a[0]&0xf0 == 224:
		return "a multicast address"
	case a == [4]byte{255, 255, 255, 255}:
		return "the broadcast address"
	case a[0]&0xf0 == 240:
		return "a reserved address (240.0.0.0/4)"
	}
	return ""
}

func nonPublicReason6(a [16]byte) string {
	// embedded checks the IPv4 address that a translation or tunnelling
	// prefix wraps: such an address reaches whatever the IPv4 one reaches.
	embedded := func(prefix string, v4 [4]byte) string {
		if r := nonPublicReason4(v4); r != "" {
			return prefix + " address wrapping " + netip.AddrFrom4(v4).String() + ", " + r
		}
		return ""
	}
	switch {
	case a == [16]byte{}:
		return "an unspecified address"
	case a == [16]byte{15: 1}:
		return "a loopback address"
	case a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && isZero(a[4:12]):
		// 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052).
		return embedded("a NAT64", [4]byte(a[12:16]))
	case a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1:
		return "a local-use NAT64 address (64:ff9b:1::/48)"
	case a[0]&0xfe == 0xfc:
		return "a unique local address (fc00::/7)"
	case a[0] == 0xfe && a[1]&0xc0 == 0x80:
		return "a link-local address (fe80::/10)"
	case a[0] == 0xfe && a[1]&0xc0 == 0xc0:
		return "a site-local address (fec0::/10)"
	case a[0] == 0xff:
		return "a multicast address"
	case a[0]&0xe0 != 0x20:
		// Only 2000::/3 is allocated for global unicast.
		return "a reserved IPv6 address (outside 2000::/3)"
	case a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8,
		a[0] == 0x3f && a[1] == 0xff && a[2]&0xf0 == 0:
		return "a documentation address"
	case a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0x02 && a[4] == 0 && a[5] == 0:
		return "a benchmarking address (2001:2::/48)"
	case a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && (a[3]&0xf0 == 0x10 || a[3]&0xf0 == 0x20):
		return "an ORCHID address (2001:10::/28, 2001:20::/28)"
	case a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0:
		// Teredo (RFC 4380): the server's IPv4 address in bits 32-63 and
		// the client's, inverted, in the last 32 bits.
		if r := embedded("a Teredo", [4]byte(a[4:8])); r != "" {
			return r
		}
		client := [4]byte{^a[12], ^a[13], ^a[14], ^a[15]}
		return embedded("a Teredo", client)
	case a[0] == 0x20 && a[1] == 0x02:
		// 6to4 (RFC 3056): the IPv4 address in bits 16-47.
		return embedded("a 6to4", [4]byte(a[2:6]))
	}
	return ""
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
