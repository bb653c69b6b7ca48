// Package shortlink derives the keys and the short base62 codes that identify
// a link on a watched page.
//
// Two identifiers come from one hash of the link's normalised URL:
//
//   - The key ([Key]) is 64 bits of SHA-256. PostgreSQL decides whether a link
//     is new by inserting (page id, key), so the key must be collision-free in
//     practice. By the birthday bound, the chance that any two of n links on a
//     page share a key is about n²/2⁶⁵: about 2.7e-10 on a page with 100,000
//     links, well under the 1e-9 the design allows.
//   - The code ([Code]) is the key written in base62 (0-9a-zA-Z) with a
//     fixed number of characters. Redis keeps a page's seen-set as codes, and
//     a collision there reads as "already seen", a silently lost update. With
//     [DefaultLength] (8 characters, 62⁸ ≈ 2.2e14 codes) the chance of any
//     collision on a page with 10,000 links is about 2.3e-7, under one in a
//     million. The source paper's 6 characters ([CompatLength], 62⁶ ≈ 5.7e10
//     codes) give about 1 chance in 1,100 at 10,000 links; they stay available
//     for compatibility only.
//
// Codes are a cache's shorthand; the key is the truth. Both depend only on the
// normalised URL, so every process computes the same ones without talking to
// another. All functions are safe for concurrent use.
package shortlink

import (
	"crypto/sha256"
	"encoding/binary"
)

// Code lengths, in base62 characters.
const (
	// DefaultLength keeps the chance of any code collision on a page with
	// 10,000 links at about 2.3e-7 (62⁸ ≈ 2.2e14 codes).
	DefaultLength = 8
	// CompatLength is the source paper's length: about 1 chance in 1,100 of a
	// collision on a page with 10,000 links (62⁶ ≈ 5.7e10 codes). Use it only
	// to stay compatible with codes stored by that system.
	CompatLength = 6
	// MaxLength is the longest code: 11 characters spell any 64-bit key
	// (62¹¹ > 2⁶⁴ > 62¹⁰).
	MaxLength = 11
)

// alphabet is the design's base62 alphabet, digit values in this order. It is
// not in byte order ('A' < 'a'), so codes do not sort like their values.
const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Key returns the link key of a normalised URL: the first 8 bytes of the
// URL's SHA-256 digest, read big-endian. The URL must already be normalised
// (see package urlnorm); Key hashes the bytes it is given as they are.
func Key(normalizedURL string) uint64 {
	// Copying into a stack buffer spares the heap allocation that
	// []byte(normalizedURL) costs once the URL is longer than 32 bytes.
	var buf [512]byte
	sum := sha256.Sum256(append(buf[:0], normalizedURL...))
	return binary.BigEndian.Uint64(sum[:8])
}

// Code returns the base62 code of key with exactly length characters, left
// padded with '0'. length is clamped to [1, MaxLength]; a code shorter than
// MaxLength spells key modulo 62^length (see [CodeValue]), and a code of
// MaxLength spells the whole key. Use [DefaultLength] unless stored codes of
// another length must keep matching.
func Code(key uint64, length int) string {
	length = clampLength(length)
	var buf [MaxLength]byte
	v := CodeValue(key, length)
	for i := len(buf) - 1; i >= len(buf)-length; i-- {
		buf[i] = alphabet[v%62]
		v /= 62
	}
	return string(buf[len(buf)-length:])
}

// CodeValue returns the number that Code(key, length) spells: key modulo
// 62^length, or key itself when length is MaxLength or more. length is
// clamped to [1, MaxLength] as in [Code]. A cache can store the value as an
// integer instead of the string; Code(CodeValue(key, n), n) == Code(key, n).
func CodeValue(key uint64, length int) uint64 {
	length = clampLength(length)
	if length == MaxLength {
		return key
	}
	m := uint64(1)
	for range length {
		m *= 62
	}
	return key % m
}

func clampLength(length int) int {
	return min(max(length, 1), MaxLength)
}
