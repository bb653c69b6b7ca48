package domwalk

import "bytes"

// nodeBytes is the heap one node of a parsed tree takes: an html.Node is 112
// bytes, allocated in the 128-byte size class. Measured with html.Parse, 10
// MiB of "<p>" (3.5 M elements) took ~400 MiB and 10 MiB of "<br>" ~300 MiB,
// 115 bytes per tag, so one node per tag at this price does not undercount.
const nodeBytes = 128

// TreeBytes estimates, without parsing, the heap in bytes that html.Parse
// takes to build the tree of src: a node per start tag plus a copy of the
// text and attributes. It counts every "<" followed by an ASCII letter, so
// it reads src once and allocates nothing. The estimate is what [ParseBytes]
// compares with Limits.MaxTreeBytes, and what a caller holding many pages
// can reserve for the parse of one (see [ParseCost]).
func TreeBytes(src []byte) int64 {
	tags := 0
	for rest := src; ; {
		i := bytes.IndexByte(rest, '<')
		if i < 0 || i+1 >= len(rest) {
			break
		}
		if c := rest[i+1] | 0x20; 'a' <= c && c <= 'z' {
			tags++
		}
		rest = rest[i+1:]
	}
	return int64(tags)*nodeBytes + int64(len(src))
}

// ParseCost returns the most heap in bytes that ParseBytes(src, _, lim) takes
// beyond src itself: the tree's estimate, or, for a page estimated over
// lim.MaxTreeBytes, the flat reader's bound, which is MaxTreeBytes.
func ParseCost(src []byte, lim Limits) int64 {
	return min(TreeBytes(src), lim.WithDefaults().MaxTreeBytes)
}
