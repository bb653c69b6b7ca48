package crawler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/domwalk"
)

// Pages held for parsing are counted in bytes: a page and its tree that
// fill the budget keep the next one out until they leave, however many
// parse slots are free.
func TestParseGateCountsBytes(t *testing.T) {
	lim := domwalk.Limits{}.WithDefaults()
	big := []byte(strings.Repeat("<p>", 1<<20)) // 3 MiB, a tree of 1 M nodes
	small := []byte(`<a href="/x">x</a>`)
	cost := int64(len(big)) + domwalk.ParseCost(big, lim)
	g := newParseGate(cost+int64(len(small))*100, 8)

	leave, err := g.enter(context.Background(), big, lim)
	if err != nil {
		t.Fatal(err)
	}
	leaveSmall, err := g.enter(context.Background(), small, lim)
	if err != nil {
		t.Fatalf("a small page beside a big one within the budget: %v", err)
	}
	leaveSmall()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx, big, lim); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second big page entered over the budget (err %v); want it to wait", err)
	}
	leave()
	leave, err = g.enter(context.Background(), big, lim)
	if err != nil {
		t.Fatalf("after the first left: %v", err)
	}
	leave()
}

// A page costing more than the whole budget is parsed alone rather than
// never.
func TestParseGateAdmitsAPageOverTheBudget(t *testing.T) {
	g := newParseGate(1<<10, 2)
	leave, err := g.enter(context.Background(), []byte(strings.Repeat("<br>", 1<<12)), domwalk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx, []byte("<a>"), domwalk.Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a page entered beside one holding the whole budget (err %v)", err)
	}
	leave()
}
