// Package watch holds portalwatch's domain: the messages that travel between
// the scheduler, the crawlers and the processor, the pages users watch, the
// links found on them and the updates users read. It depends on the standard
// library and a JSON codec only, so every adapter and service can share it.
//
// Messages are coded with github.com/goccy/go-json, which reads and writes
// the same JSON as encoding/json (the tests compare the two): a task of a
// portal's homepage is 15–40 KB of JSON, and encoding/json's decoding of it
// was a fifth of the processor's CPU. They are written without HTML
// escaping (as encoding/json with SetEscapeHTML(false)): no message is put
// into a web page, and escaping "&", "<" and ">" as six bytes each let a
// page of URLs full of "&" make a task several times its size.
package watch
