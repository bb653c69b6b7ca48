// Package secrets seals the values of the secret request headers of pages
// (Cookie, Authorization…) with AES-256-GCM under the key of the
// deployment, PORTALWATCH_SECRETS_KEY, so that they are in clear only inside the
// programs that hold it: web and watchctl seal what a person gives, the
// crawler opens it just before the fetch. The database, the jobs, the dead
// letters and every export hold the sealed form.
//
// A sealed value is "v1.<key id>.<base64url of nonce, ciphertext and tag>".
// The nonce is random (12 bytes); the additional data binds the page id
// and the header name, so a sealed value copied to another page or header
// does not open. The key id (the first 4 bytes of the SHA-256 of the key,
// in hex) lets a crawler with another key say so instead of failing
// obscurely, and lets a program that holds old keys besides the current
// one (PORTALWATCH_SECRETS_OLD_KEYS, while a key is being changed) open a
// value with the key that sealed it.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// KeyBytes is the length of a key: AES-256.
const KeyBytes = 32

// Config is the setting of the key.
type Config struct {
	// Key is base64 (standard or URL alphabet, padded or not) of 32 random
	// bytes: `openssl rand -base64 32`. Empty means no key: secret headers
	// are refused where they would be stored, and a crawler fails the
	// checks of pages that have them.
	Key string `env:"PORTALWATCH_SECRETS_KEY"`
	// OldKeys are earlier keys, comma-separated, in the same form: values
	// sealed with them still open, and nothing is sealed with them. They
	// are for the time a key is changed: every program gets the new Key
	// with the old one here, `watchctl secrets reseal` seals every stored
	// value again with Key, and then the old keys can go. Empty, the
	// default, opens only what Key sealed.
	OldKeys string `env:"PORTALWATCH_SECRETS_OLD_KEYS"`
}

// Validate refuses a key that is not base64 of 32 bytes, old keys without
// a current one, and an old key that is the current one. Its messages
// never show a key.
func (c Config) Validate() error {
	if c.Key != "" {
		if _, err := decodeKey(c.Key); err != nil {
			return fmt.Errorf("PORTALWATCH_SECRETS_KEY: %w", err)
		}
	}
	old := c.oldKeys()
	if len(old) > 0 && c.Key == "" {
		return errors.New("PORTALWATCH_SECRETS_OLD_KEYS is set without PORTALWATCH_SECRETS_KEY: old keys only open values, so give the key that seals from now on too")
	}
	for i, o := range old {
		raw, err := decodeKey(o)
		if err != nil {
			return fmt.Errorf("PORTALWATCH_SECRETS_OLD_KEYS, key %d of %d: %w", i+1, len(old), err)
		}
		if cur, _ := decodeKey(c.Key); string(raw) == string(cur) {
			return fmt.Errorf("PORTALWATCH_SECRETS_OLD_KEYS, key %d of %d: it is PORTALWATCH_SECRETS_KEY itself; list only the keys it replaces", i+1, len(old))
		}
	}
	return nil
}

// oldKeys returns the entries of OldKeys, blanks dropped.
func (c Config) oldKeys() []string {
	var out []string
	for _, k := range strings.Split(c.OldKeys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Sealer returns the keys of c as a watch.Sealer: the Key alone, or a
// Keyring when c has old keys; nil when c has no key (a nil interface,
// not a nil *Key).
func (c Config) Sealer() (watch.Sealer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Key == "" {
		return nil, nil
	}
	k, err := ParseKey(c.Key)
	if err != nil {
		return nil, err
	}
	old := c.oldKeys()
	if len(old) == 0 {
		return k, nil
	}
	ring := &Keyring{current: k, old: make(map[string]*Key, len(old))}
	for _, o := range old {
		ok, err := ParseKey(o)
		if err != nil {
			return nil, err
		}
		ring.old[ok.id] = ok
	}
	return ring, nil
}

// Keyring seals with its current key and opens with the key that sealed
// a value, current or old. It implements watch.Sealer and is safe for
// concurrent use.
type Keyring struct {
	current *Key
	old     map[string]*Key // by ID
}

var _ watch.Sealer = (*Keyring)(nil)

// Seal seals value with the current key.
func (r *Keyring) Seal(pageID int64, name, value string) (string, error) {
	return r.current.Seal(pageID, name, value)
}

// Open opens a value sealed with the current key or an old one.
func (r *Keyring) Open(pageID int64, name, sealed string) (string, error) {
	if old, ok := r.old[keyIDOf(sealed)]; ok {
		return old.Open(pageID, name, sealed)
	}
	return r.current.Open(pageID, name, sealed)
}

// keyIDOf returns the key id a sealed value records, "" when it has none.
func keyIDOf(sealed string) string {
	parts := strings.SplitN(sealed, ".", 3)
	if len(parts) != 3 || parts[0] != version {
		return ""
	}
	return parts[1]
}

// Current reports whether sealed was sealed with the key that seals now
// (s is a *Key or a *Keyring): a value that is not needs sealing again
// before the old key goes.
func Current(s watch.Sealer, sealed string) bool {
	switch k := s.(type) {
	case *Key:
		return keyIDOf(sealed) == k.id
	case *Keyring:
		return keyIDOf(sealed) == k.current.id
	}
	return false
}

// Key seals and opens header values; it implements watch.Sealer and is
// safe for concurrent use.
type Key struct {
	aead cipher.AEAD
	id   string
}

var _ watch.Sealer = (*Key)(nil)

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeyBytes {
				return nil, fmt.Errorf("decodes to %d bytes, want %d: make a key with `openssl rand -base64 32`", len(b), KeyBytes)
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64: make a key with `openssl rand -base64 32`")
}

// ParseKey reads a key as Config.Key holds it.
func ParseKey(s string) (*Key, error) {
	raw, err := decodeKey(s)
	if err != nil {
		return nil, fmt.Errorf("PORTALWATCH_SECRETS_KEY: %w", err)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("PORTALWATCH_SECRETS_KEY: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("PORTALWATCH_SECRETS_KEY: %w", err)
	}
	sum := sha256.Sum256(raw)
	return &Key{aead: aead, id: hex.EncodeToString(sum[:4])}, nil
}

// ID names the key without giving it away: what a sealed value records.
func (k *Key) ID() string { return k.id }

const version = "v1"

// additional binds a sealed value to its page and header.
func additional(pageID int64, name string) []byte {
	return []byte("portalwatch header v1|page " + strconv.FormatInt(pageID, 10) + "|" + strings.ToLower(name))
}

// Seal seals value for the header name of page pageID.
func (k *Key) Seal(pageID int64, name, value string) (string, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(value)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal header %s of page %d: %w", name, pageID, err)
	}
	out := k.aead.Seal(nonce, nonce, []byte(value), additional(pageID, name))
	return version + "." + k.id + "." + base64.RawURLEncoding.EncodeToString(out), nil
}

// ErrOtherKey says a value was sealed under another key than this
// program's: the key was changed (or differs between programs) since.
var ErrOtherKey = errors.New("sealed with another PORTALWATCH_SECRETS_KEY")

// Open returns the value sealed for the header name of page pageID. A
// value sealed under another key, for another page or header, or changed
// in any way, does not open.
func (k *Key) Open(pageID int64, name, sealed string) (string, error) {
	parts := strings.Split(sealed, ".")
	if len(parts) != 3 || parts[0] != version {
		return "", fmt.Errorf("header %s of page %d: not a sealed value of this version", name, pageID)
	}
	if parts[1] != k.id {
		return "", fmt.Errorf("header %s of page %d: %w (key id %s; this program has %s): "+
			"give every program the same key, list the key that sealed it in PORTALWATCH_SECRETS_OLD_KEYS, or set the header again",
			name, pageID, ErrOtherKey, parts[1], k.id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", fmt.Errorf("header %s of page %d: the sealed value is damaged", name, pageID)
	}
	n := k.aead.NonceSize()
	clear, err := k.aead.Open(nil, raw[:n], raw[n:], additional(pageID, name))
	if err != nil {
		return "", fmt.Errorf("header %s of page %d: the sealed value does not open with this key for this page (moved from another page, or damaged): set the header again", name, pageID)
	}
	return string(clear), nil
}
