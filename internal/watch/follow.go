package watch

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/goccy/go-json"
)

// Followed is a page's following state (removals) as the scheduler read it
// from the page's row. With it the processor computes what a check changes
// without asking the database, and the store verifies that the page's state
// is still this one (Checks) before it writes the new state.
type Followed struct {
	// Checks is the page's count of successful checks (pages.ok_checks);
	// every check that changes the following state counts, so it tells
	// whether the state moved since.
	Checks int64 `json:"checks"`
	// Afresh says a whole check starts following the page from its own
	// link set: the page is not followed yet, has no baseline, or is to be
	// re-baselined. The sets are then empty.
	Afresh bool `json:"afresh,omitempty"`
	// The followed link set is Base less Gone plus Added: the page's links
	// at its last whole check, and the new links of truncated checks since.
	// Base is always written, empty when Afresh: a job of a version before
	// it (migration 00012) has none, and its state is not to be trusted.
	Base  Keys `json:"base"`
	Added Keys `json:"added,omitempty"`
	Gone  Keys `json:"gone,omitempty"`
	// Pending and PendingSince are the keys of the links absent and not
	// yet due, sorted, and the check count at which each left.
	Pending      Keys    `json:"pending,omitempty"`
	PendingSince []int64 `json:"pendingSince,omitempty"`
}

// Keys are link keys (shortlink.Key) as PostgreSQL's bigint holds them: the
// bits, not the number, are the key. In JSON they are one base64 string of
// 8 bytes a key, big-endian: a homepage's 300 keys are 3.2 KB so, where
// decimal numbers would take twice as much in every job and task.
type Keys []int64

// Bytes is k as 8 bytes a key, big-endian, in k's order: the form jobs
// carry (MarshalJSON) and pages.follow_base stores (migration 00015).
func (k Keys) Bytes() []byte {
	raw := make([]byte, 0, 8*len(k))
	for _, key := range k {
		raw = binary.BigEndian.AppendUint64(raw, uint64(key))
	}
	return raw
}

// KeysFromBytes reads what Bytes writes. The keys are not nil when raw is
// empty: an empty set is known.
func KeysFromBytes(raw []byte) (Keys, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("link keys: want 8 bytes a key, got %d bytes", len(raw))
	}
	out := make(Keys, len(raw)/8)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(raw[8*i:]))
	}
	return out, nil
}

// MarshalJSON writes k as one base64 string.
func (k Keys) MarshalJSON() ([]byte, error) {
	raw := k.Bytes()
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(raw))+2)
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, raw)
	return append(out, '"'), nil
}

// Known reports whether f is a state the processor can compute a check
// from: one a scheduler of this version wrote.
func (f *Followed) Known() bool { return f != nil && (f.Afresh || f.Base != nil) }

// UnmarshalJSON reads what MarshalJSON writes, and the arrays of numbers
// that jobs before migration 00012 carried; null is no keys.
func (k *Keys) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*k = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var numbers []int64
		if err := json.Unmarshal(b, &numbers); err != nil {
			return fmt.Errorf("link keys: %w", err)
		}
		*k = numbers
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("link keys: want a base64 string, got %.40s", b)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err == nil {
		*k, err = KeysFromBytes(raw)
	}
	if err != nil {
		return fmt.Errorf("link keys: want base64 of 8 bytes a key, got %d characters", len(s))
	}
	return nil
}
