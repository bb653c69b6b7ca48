// Command pwbench measures portalwatch: it runs the real programs (scheduler,
// crawlers, processor) against the real PostgreSQL, RabbitMQ and Redis on
// loopback, feeds them a farm of synthetic portal homepages (or replays the
// real homepage histories of ../shared/corpus/history) and reports throughput,
// CPU per page by process, detection latency, memory and correctness. The last
// line it prints is one JSON object, so runs can be compared by a script.
//
// Usage:
//
//	pwbench e2e [flags]        the whole pipeline (make bench)
//	pwbench scheduler [flags]  1,000,000 due pages vs raw confirmed publishing (make bench-scheduler)
//	pwbench peer [flags]       urlwatch and portalwatch on the same pages (make bench-peer)
//	pwbench redis [flags]      Redis bytes per seen link only
//
// Every run gets its own database, queue names and Redis key prefix and
// removes them when it ends. All traffic stays on loopback, every load is
// bounded in count and time, and every process pwbench starts is stopped by
// its pid. Run "pwbench <command> -h" for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pwbench:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: pwbench e2e|scheduler|peer|redis [flags]")

// run dispatches to one benchmark. Progress goes to stderr, results to
// stdout, whose last line is the run's JSON summary.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "e2e":
		return runE2E(ctx, args, stdout, stderr)
	case "scheduler":
		return runScheduler(ctx, args, stdout, stderr)
	case "peer":
		return runPeer(ctx, args, stdout, stderr)
	case "redis":
		return runRedis(ctx, args, stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q: %w", cmd, errUsage)
	}
}
