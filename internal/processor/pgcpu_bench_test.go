package processor_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// probeApp names the benchmark's own connections (probePool), which pgCPU
// leaves out.
const probeApp = "pwbench-probe"

// probePool is a pool on dsn for the benchmark's own reads.
func probePool(b *testing.B, dsn string) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = probeApp
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// pgCPU is the CPU time that PostgreSQL's backends of probe's database,
// but probe's own, have used, from /proc/<pid>/schedstat (nanoseconds,
// where /proc/<pid>/stat counts ticks). The server runs on this machine in
// every benchmark here. A backend that ended between two readings is lost
// from the later one, so a benchmark reads it around a loop whose pool
// keeps its connections.
func pgCPU(b *testing.B, probe *pgxpool.Pool) time.Duration {
	b.Helper()
	rows, err := probe.Query(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name <> $1`, probeApp)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			continue // ended since the query, or not on this machine
		}
		ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			b.Fatalf("read /proc/%d/schedstat: %v", pid, err)
		}
		total += time.Duration(ns)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return total
}
