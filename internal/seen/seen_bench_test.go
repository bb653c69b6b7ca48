package seen_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// BenchmarkSeen is the processor's Redis round trip for one task of a
// typical homepage (400 links, all known) against the real Redis: one
// pipelined SMISMEMBER per bucket.
func BenchmarkSeen(b *testing.B) {
	for _, n := range []int{100, 400, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			url, prefix := testsvc.Redis(b)
			set, err := seen.Open(url, seen.Config{Prefix: prefix, Epoch: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer set.Close()
			codes := make([]uint64, n)
			for i := range codes {
				codes[i] = shortlink.CodeValue(shortlink.Key(fmt.Sprintf("https://portal.example/news/%d.html", i)), shortlink.DefaultLength)
			}
			ctx := context.Background()
			if err := set.Add(ctx, 1, codes); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := set.Seen(ctx, 1, codes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/link")
		})
	}
}

// BenchmarkAdd is the processor's write after a commit: SADD and EXPIRE per
// bucket, pipelined, for a page's new links.
func BenchmarkAdd(b *testing.B) {
	url, prefix := testsvc.Redis(b)
	set, err := seen.Open(url, seen.Config{Prefix: prefix, Epoch: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	ctx := context.Background()
	codes := make([]uint64, 3)
	page := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		page++
		for i := range codes {
			codes[i] = uint64(page)*7 + uint64(i)
		}
		if err := set.Add(ctx, page%1000, codes); err != nil {
			b.Fatal(err)
		}
	}
}
