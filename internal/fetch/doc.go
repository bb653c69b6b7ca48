// Package fetch is portalwatch's HTTP adapter: the crawler's bounded HTTP
// client, the guard that keeps it away from non-public addresses, robots.txt
// handling and the decoding of pages to UTF-8.
//
// A [Client] fetches one page per [Client.Fetch] call with limits on time,
// redirects and (decompressed) body size, accepts HTML only, obeys robots.txt
// (of every host a redirect reaches too), spaces the fetches of an origin by
// its Crawl-delay through a [Pacer], deferring rather than waiting long
// ([KindDeferred]), and returns the page decoded to UTF-8 by [DecodeHTML]. Every connection it makes is checked at dial time against
// [IsPublic], so neither DNS rebinding nor a redirect can reach loopback,
// private or cloud-metadata addresses unless [Config.AllowPrivate] is set.
// [CheckURL] applies the same rules when a user registers a page.
//
// Failures are returned as [*Error], whose [Kind] lets the caller tell a
// permanent failure (a 404, a page that is not HTML) from a transient one
// (a timeout, a refused connection).
package fetch
