package domwalk

import "bytes"

// nodeBytes is the heap one node of a tree takes: an html.Node is 112 bytes,
// allocated in the 128-byte size class.
const nodeBytes = 128

// tagBytes is what TreeBytes counts per tag: three nodes' worth, for the
// element, the text node that usually follows it and its attributes.
const tagBytes = 3 * nodeBytes

// TreeBytes estimates from above, without parsing, the heap in bytes that
// html.Parse takes to build the tree of src: 384 bytes per start tag (see
// tagBytes) and two per byte of src (the text and attribute values copied
// into the tree, and the strings around them). On the corpus's real pages
// the trees took at most 93% of it; on pages of one tag repeated, 29% ("<p>")
// to 92% (a <span> with four attributes). It counts every "<" followed by an
// ASCII letter, so it reads src once and allocates nothing. [ParseBytes]
// compares it with Limits.MaxTreeBytes; a caller holding many pages can
// reserve it for the parse of one (see [ParseCost]).
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
	return int64(tags)*tagBytes + 2*int64(len(src))
}

// ParseCost returns the most heap in bytes that ParseBytes(src, _, lim) takes
// beyond src itself: the tree's estimate, or, for a page estimated over
// lim.MaxTreeBytes, the flat reader's bound, which is MaxTreeBytes.
func ParseCost(src []byte, lim Limits) int64 {
	return min(TreeBytes(src), lim.WithDefaults().MaxTreeBytes)
}
