package shortlink

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// SetDigest returns a digest of a page's links, given their normalised URLs
// and their texts (texts[i] is the text of urls[i]): the same links with
// the same texts give the same digest whatever the order; another URL, or
// one link's other text, gives another one (128 bits of SHA-256 over the
// links sorted by key). A crawler that finds the links a page had at its
// last recorded check, headlines included, can send "unchanged" instead of
// every link again; a rewritten headline must reach the processor, which
// records the revision. A URL given twice counts once, with its first text.
func SetDigest(urls, texts []string) string {
	keys := make([]uint64, len(urls))
	for i, u := range urls {
		keys[i] = Key(u)
	}
	return KeySetDigest(keys, texts)
}

// KeySetDigest is SetDigest for links whose keys are already known.
func KeySetDigest(keys []uint64, texts []string) string {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	// A stable sort keeps a repeated key's first text first.
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	h := sha256.New()
	var b [8 + binary.MaxVarintLen64]byte
	for n, i := range order {
		if n > 0 && keys[order[n-1]] == keys[i] {
			continue
		}
		binary.BigEndian.PutUint64(b[:8], keys[i])
		// The length keeps one link's text from running into the next key.
		m := binary.PutUvarint(b[8:], uint64(len(texts[i])))
		h.Write(b[:8+m])
		h.Write([]byte(texts[i]))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
