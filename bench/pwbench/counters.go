package pwbench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// scrapeCounter returns the sum of every sample of the named metric that
// the program at addr serves on /metrics (Prometheus text format).
func scrapeCounter(ctx context.Context, addr, name string) (float64, error) {
	return scrapeCounterLabel(ctx, addr, name, nil)
}

// isSourceOutcome is true for the samples of the processor's tasks that
// were a feed's or a sitemap's check or a discovery, not a page check.
func isSourceOutcome(labels string) bool {
	return strings.Contains(labels, `outcome="source_`) || strings.Contains(labels, `outcome="discovery"`)
}

// scrapeAllLabel sums, over several programs, the samples of a metric whose
// labels (the text between the braces) keep accepts.
func scrapeAllLabel(ctx context.Context, procs []*process, name string, keep func(labels string) bool) (float64, error) {
	var sum float64
	for _, p := range procs {
		v, err := scrapeCounterLabel(ctx, p.httpAddr, name, keep)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// scrapeCounterLabel is scrapeCounter over the samples whose labels keep
// accepts (nil: every sample).
func scrapeCounterLabel(ctx context.Context, addr, name string, keep func(labels string) bool) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // another metric whose name starts with this one
		}
		if keep != nil {
			labels := ""
			if rest[0] == '{' {
				labels = rest[:strings.IndexByte(rest, '}')+1]
			}
			if !keep(labels) {
				continue
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

// scrapeAll sums a metric over several programs.
func scrapeAll(ctx context.Context, procs []*process, name string) (float64, error) {
	var sum float64
	for _, p := range procs {
		v, err := scrapeCounter(ctx, p.httpAddr, name)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// pgCounters are PostgreSQL's cumulative statistics for the run's database.
// pg_stat_statements is not assumed: transactions and rows written are what
// every server counts.
type pgCounters struct {
	commits, rollbacks           float64
	inserted, updated, deleted   float64 // pg_stat_database tup_*
	tableIns, tableUpd, tableHot map[string]float64
	walBytes                     float64 // pg_current_wal_lsn, cluster-wide
}

func readPG(ctx context.Context, db *pgxpool.Pool) (pgCounters, error) {
	var c pgCounters
	err := db.QueryRow(ctx, `
		SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted,
		       (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8
		FROM pg_stat_database WHERE datname = current_database()`).
		Scan(&c.commits, &c.rollbacks, &c.inserted, &c.updated, &c.deleted, &c.walBytes)
	if err != nil {
		return c, fmt.Errorf("read pg_stat_database: %w", err)
	}
	c.tableIns, c.tableUpd, c.tableHot = map[string]float64{}, map[string]float64{}, map[string]float64{}
	rows, err := db.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables`)
	if err != nil {
		return c, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var ins, upd, hot float64
		if err := rows.Scan(&name, &ins, &upd, &hot); err != nil {
			return c, err
		}
		c.tableIns[name], c.tableUpd[name], c.tableHot[name] = ins, upd, hot
	}
	return c, rows.Err()
}

// redisCalls returns the calls of every command so far (INFO commandstats),
// server-wide.
func redisCalls(ctx context.Context, rdb *redis.Client) (map[string]float64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("Redis INFO commandstats: %w", err)
	}
	calls := map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				calls[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return calls, nil
}

// redisUsedMemory returns INFO memory's used_memory.
func redisUsedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("Redis INFO memory: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("Redis INFO memory: no used_memory")
}

// percentile returns the p-th percentile (0..100) of sorted xs, by the
// nearest-rank method; NaN when xs is empty.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank-1, 0), len(sorted)-1)]
}

// spread summarises repeated measurements: median, min and max.
type spread struct{ median, min, max float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	return spread{s[len(s)/2], s[0], s[len(s)-1]}
}

func (s spread) String() string {
	return fmt.Sprintf("%.4g (%.4g–%.4g)", s.median, s.min, s.max)
}

// round3 keeps three significant decimals for the JSON summary.
func round3(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return -1
	}
	return math.Round(x*1000) / 1000
}
