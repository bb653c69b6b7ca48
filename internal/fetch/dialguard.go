package fetch

import "syscall"

// DialGuard returns a net.Dialer Control function that refuses to connect
// to any address IsPublic rejects, unless allowPrivate. It is the guard the
// Client's own dialer uses, for other outbound clients (the notifier's
// webhooks) that fetch URLs users typed: Go calls it after name resolution,
// for every address it tries, so DNS rebinding and reconnects are caught
// too. Only tcp4 and tcp6 are allowed.
func DialGuard(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return dialGuard(allowPrivate, nil)
}
