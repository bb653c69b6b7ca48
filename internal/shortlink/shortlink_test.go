package shortlink_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/shortlink"
)

// The expected values below were computed independently (Python hashlib and a
// hand-written base62 encoder), not with this package.

func TestKey(t *testing.T) {
	tests := []struct {
		url  string
		want uint64
	}{
		{"", 0xe3b0c44298fc1c14},
		{"https://example.com/", 0x0f115db062b7c0dd},
		{"http://example.com/a?b=1", 0xcc90c38180889c32},
	}
	for _, tt := range tests {
		if got := shortlink.Key(tt.url); got != tt.want {
			t.Errorf("Key(%q) = %#x, want %#x", tt.url, got, tt.want)
		}
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		name   string
		key    uint64
		length int
		want   string
	}{
		{"zero pads", 0, shortlink.DefaultLength, "00000000"},
		{"one", 1, shortlink.DefaultLength, "00000001"},
		{"last digit", 61, shortlink.DefaultLength, "0000000Z"},
		{"carry", 62, shortlink.DefaultLength, "00000010"},
		{"single char wraps", 62, 1, "0"},
		{"max key default", math.MaxUint64, shortlink.DefaultLength, "hA16ahyf"},
		{"max key compat", math.MaxUint64, shortlink.CompatLength, "16ahyf"},
		{"max key 10", math.MaxUint64, 10, "YGhA16ahyf"},
		{"max key whole", math.MaxUint64, shortlink.MaxLength, "lYGhA16ahyf"},
		{"vector default", 0x0f115db062b7c0dd, shortlink.DefaultLength, "KQMxIunz"},
		{"vector compat", 0x0f115db062b7c0dd, shortlink.CompatLength, "MxIunz"},
		{"vector whole", 0x0f115db062b7c0dd, shortlink.MaxLength, "1icKQMxIunz"},
		{"vector 2 default", 0xcc90c38180889c32, shortlink.DefaultLength, "D5OtHxQu"},
		{"vector 3 default", 0xe3b0c44298fc1c14, shortlink.DefaultLength, "s1iohzLK"},
		{"length 0 clamps to 1", 1, 0, "1"},
		{"negative length clamps to 1", 61, -5, "Z"},
		{"length 12 clamps to 11", 1, 12, "00000000001"},
		{"huge length clamps to 11", math.MaxUint64, 1 << 30, "lYGhA16ahyf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shortlink.Code(tt.key, tt.length); got != tt.want {
				t.Errorf("Code(%#x, %d) = %q, want %q", tt.key, tt.length, got, tt.want)
			}
		})
	}
}

func TestCodeValue(t *testing.T) {
	tests := []struct {
		key    uint64
		length int
		want   uint64
	}{
		{0x0f115db062b7c0dd, shortlink.DefaultLength, 164992356734173},
		{0xe3b0c44298fc1c14, shortlink.DefaultLength, 98678858421524},
		{math.MaxUint64, shortlink.MaxLength, math.MaxUint64},
		{math.MaxUint64, 99, math.MaxUint64},
		{123, 1, 123 % 62},
		{123, 0, 123 % 62},
	}
	for _, tt := range tests {
		if got := shortlink.CodeValue(tt.key, tt.length); got != tt.want {
			t.Errorf("CodeValue(%#x, %d) = %d, want %d", tt.key, tt.length, got, tt.want)
		}
	}
}

// decode is an independent base62 decoder: it checks Code against the
// definition instead of against itself.
func decode(t *testing.T, code string) uint64 {
	t.Helper()
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var v uint64
	for _, r := range code {
		d := strings.IndexRune(alphabet, r)
		if d < 0 {
			t.Fatalf("code %q has %q, outside the base62 alphabet", code, r)
		}
		hi, lo := mulAdd(v, 62, uint64(d))
		if hi != 0 {
			t.Fatalf("code %q overflows 64 bits", code)
		}
		v = lo
	}
	return v
}

func mulAdd(v, m, a uint64) (hi, lo uint64) {
	// 128-bit v*m+a without math/bits, to stay obviously independent.
	const mask = 1<<32 - 1
	v0, v1 := v&mask, v>>32
	p0 := v0*m + a
	p1 := v1*m + p0>>32
	return p1 >> 32, p1<<32 | p0&mask
}

// checkCode holds the properties every code has, whatever the key and length.
func checkCode(t *testing.T, key uint64, length int) {
	t.Helper()
	code := shortlink.Code(key, length)
	want := min(max(length, 1), shortlink.MaxLength)
	if len(code) != want {
		t.Fatalf("Code(%#x, %d) = %q: %d chars, want %d", key, length, code, len(code), want)
	}
	value := shortlink.CodeValue(key, length)
	if got := decode(t, code); got != value {
		t.Fatalf("Code(%#x, %d) = %q decodes to %d, want CodeValue %d", key, length, code, got, value)
	}
	if again := shortlink.Code(value, length); again != code {
		t.Fatalf("Code(CodeValue(%#x, %d)) = %q, want %q", key, length, again, code)
	}
	if want == shortlink.MaxLength && value != key {
		t.Fatalf("CodeValue(%#x, %d) = %d, want the whole key", key, length, value)
	}
}

func TestCodeProperties(t *testing.T) {
	keys := []uint64{0, 1, 61, 62, 3843, 3844, math.MaxUint32, math.MaxUint64, math.MaxUint64 - 1, 1 << 63}
	for i := range 1000 {
		keys = append(keys, shortlink.Key(fmt.Sprintf("https://example.com/%d", i)))
	}
	for _, key := range keys {
		for length := -1; length <= shortlink.MaxLength+1; length++ {
			checkCode(t, key, length)
		}
	}
}

func FuzzCode(f *testing.F) {
	f.Add("https://example.com/", shortlink.DefaultLength)
	f.Add("", 0)
	f.Add("http://例子.测试/路径", shortlink.MaxLength)
	f.Add("x", -1)
	f.Fuzz(func(t *testing.T, url string, length int) {
		key := shortlink.Key(url)
		if key != shortlink.Key(url) {
			t.Fatalf("Key(%q) is not deterministic", url)
		}
		checkCode(t, key, length)
	})
}

func Example() {
	key := shortlink.Key("https://example.com/")
	fmt.Printf("key:    %#016x\n", key)
	fmt.Printf("code:   %s\n", shortlink.Code(key, shortlink.DefaultLength))
	fmt.Printf("compat: %s\n", shortlink.Code(key, shortlink.CompatLength))
	fmt.Printf("value:  %d\n", shortlink.CodeValue(key, shortlink.DefaultLength))
	// Output:
	// key:    0x0f115db062b7c0dd
	// code:   KQMxIunz
	// compat: MxIunz
	// value:  164992356734173
}

func BenchmarkKey(b *testing.B) {
	url := "https://www.example.com/news/2024/05/17/some-long-article-slug-about-things?id=12345"
	b.ReportAllocs()
	b.SetBytes(int64(len(url)))
	for b.Loop() {
		shortlink.Key(url)
	}
}

func BenchmarkCode(b *testing.B) {
	key := shortlink.Key("https://example.com/")
	for _, length := range []int{shortlink.CompatLength, shortlink.DefaultLength, shortlink.MaxLength} {
		b.Run(fmt.Sprint(length), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				shortlink.Code(key, length)
			}
		})
	}
}

func BenchmarkCodeValue(b *testing.B) {
	key := shortlink.Key("https://example.com/")
	b.ReportAllocs()
	for b.Loop() {
		shortlink.CodeValue(key, shortlink.DefaultLength)
	}
}
