// Package pwbench measures portalwatch: it runs the real programs (scheduler,
// crawlers, processor) against the real PostgreSQL, RabbitMQ and Redis on
// loopback, feeds them a farm of synthetic portal homepages (or replays the
// real homepage histories of ../shared/corpus/history) and reports throughput,
// CPU per page by process, detection latency, memory and correctness. The last
// line it prints is one JSON object, so runs can be compared by a script.
//
// Usage:
//
//	pwbench e2e [flags]        the whole pipeline (make bench)
//	pwbench ab -a DIR -b DIR [e2e flags]  two revisions' pipelines, alternating (make bench-ab)
//	pwbench scheduler [flags]  1,000,000 due pages vs raw confirmed publishing (make bench-scheduler)
//	pwbench peer [flags]       urlwatch and portalwatch on the same pages (make bench-peer)
//	pwbench redis [flags]      Redis bytes per seen link only
//	pwbench polite [flags]     a few origins asking more than their politeness allows (make bench-polite)
//	pwbench articles [flags]   the extractor on real article pages: articles a second per core, peak RSS (make bench-articles)
//
// Every run gets its own database, queue names and Redis key prefix and
// removes them when it ends. All traffic stays on loopback, every load is
// bounded in count and time, and every process pwbench starts is stopped by
// its pid. Run "pwbench <command> -h" for the flags.
//
// The package is the benchmark itself, and bench/cmd/pwbench is its thin
// main: the benchmark lives outside cmd/, which holds only what is deployed,
// and shares its harness (building the programs, running them as processes,
// each run's database, queues and Redis prefix) with the end-to-end tests
// through internal/testkit/systest.
package pwbench

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrUsage is wrapped by every error Run returns for bad arguments; the
// command exits 2 on it.
var ErrUsage = errors.New("usage: pwbench e2e|ab|scheduler|peer|redis|polite|articles [flags]")

// Run runs the benchmark args[0] with the flags args[1:]. Progress goes to
// stderr, results to stdout, whose last line is the run's JSON summary. It
// stops early, cleaning up, when ctx ends.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return ErrUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "e2e":
		return runE2E(ctx, args, stdout, stderr)
	case "ab":
		return runAB(ctx, args, stdout, stderr)
	case "scheduler":
		return runScheduler(ctx, args, stdout, stderr)
	case "peer":
		return runPeer(ctx, args, stdout, stderr)
	case "redis":
		return runRedis(ctx, args, stdout, stderr)
	case "polite":
		return runPolite(ctx, args, stdout, stderr)
	case "articles":
		return runArticles(ctx, args, stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q: %w", cmd, ErrUsage)
	}
}
