package fetch

import (
	"net/netip"
	"slices"
	"syscall"
)

// DialGuard returns a net.Dialer Control function that refuses to connect
// to any address IsPublic rejects, unless allowPrivate. It is the guard the
// Client's own dialer uses, for other outbound clients (the notifier's
// webhooks) that fetch URLs users typed: Go calls it after name resolution,
// for every address it tries, so DNS rebinding and reconnects are caught
// too. Only tcp4 and tcp6 are allowed.
func DialGuard(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return dialGuard(allowPrivate, nil)
}

// DialGuardAllowing is DialGuard that admits, besides public addresses,
// exactly the addresses (IP and port) of allowed: an operator's intranet
// portal, or a test farm on loopback while every other loopback address
// stays refused.
func DialGuardAllowing(allowPrivate bool, allowed []netip.AddrPort) func(network, address string, c syscall.RawConn) error {
	if len(allowed) == 0 {
		return dialGuard(allowPrivate, nil)
	}
	return dialGuard(allowPrivate, func(ap netip.AddrPort) bool {
		return slices.Contains(allowed, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	})
}
