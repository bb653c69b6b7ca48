// Command partition compares the partitioned schema of migration 00006 with
// the single tables of 00005 (issue 14): the check statement's cost
// (Store.RecordCheck for a page of ~300 links, a few of them new) with
// -links rows in links, the WAL a check writes, and retention by dropping a
// week's partition against the batched DELETE of the same rows that the
// processor ran before 00006.
//
//	go run ./bench/partition          (make bench-partition)
//
// It creates two databases of its own (pwbench_part_<id>_plain and _hash),
// fills them with generate_series in SQL, and drops them at the end, also on
// failure or Ctrl-C. Every phase is bounded by -timeout. WAL is read with
// pg_current_wal_lsn(), which counts the whole cluster: on a shared server it
// is an upper bound, so the smallest of the rounds is reported. Its last
// output line is one JSON object.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for goose
	"github.com/pressly/goose/v3"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/migrations"
)

type options struct {
	adminURL     string
	links        int
	linksPerPage int
	updates      int
	checks       int
	rounds       int
	newPerCheck  int
	timeout      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.adminURL, "postgres", "postgres://postgres@127.0.0.1:5432/postgres", "a URL whose user may CREATE DATABASE")
	flag.IntVar(&o.links, "links", 10_000_000, "rows to fill links with, in each database")
	flag.IntVar(&o.linksPerPage, "links-per-page", 300, "links of each page")
	flag.IntVar(&o.updates, "updates", 1_000_000, "rows to fill updates with, spread over 4 past weeks")
	flag.IntVar(&o.checks, "checks", 100, "checks per schema per round")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, alternating the schemas")
	flag.IntVar(&o.newPerCheck, "new", 3, "new links per check")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	if o.links < o.linksPerPage || o.linksPerPage < 1 || o.checks < 1 || o.rounds < 1 || o.updates < 4 {
		fmt.Fprintln(os.Stderr, "partition: -links must be at least -links-per-page (≥ 1), -checks and -rounds at least 1, -updates at least 4")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := run(ctx, o, log)
	if err != nil {
		log.Error("partition benchmark failed", "err", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// schema is one of the two databases under test.
type schema struct {
	name  string // "plain" (00005) or "hash" (00006)
	dsn   string
	st    *store.Store
	pool  *pgxpool.Pool
	pages int
}

// result is the run's JSON line.
type result struct {
	Links             int                `json:"links"`
	Pages             int                `json:"pages"`
	Updates           int                `json:"updates"`
	FillSeconds       map[string]float64 `json:"fill_s"`
	CheckMsMedian     map[string]float64 `json:"check_ms_median"`
	CheckMsP90        map[string]float64 `json:"check_ms_p90"`
	RoundMedians      map[string]string  `json:"check_ms_round_medians"`
	WALBytesPerCheck  map[string]float64 `json:"wal_bytes_per_check_min"`
	LinksBytesPerRow  map[string]float64 `json:"links_bytes_per_row"`
	UpdateBytesPerRow map[string]float64 `json:"updates_bytes_per_row"`
	RetentionRows     int64              `json:"retention_rows"`
	RetentionSeconds  map[string]float64 `json:"retention_s"`
	RetentionWAL      map[string]float64 `json:"retention_wal_bytes"`
	Ratio             float64            `json:"check_ratio_hash_over_plain"`
}

func run(ctx context.Context, o options, log *slog.Logger) (result, error) {
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return result{}, fmt.Errorf("make a database name: %w", err)
	}
	prefix := "pwbench_part_" + hex.EncodeToString(id)
	res := result{Links: o.links, Pages: o.links / o.linksPerPage, Updates: o.updates,
		FillSeconds: map[string]float64{}, CheckMsMedian: map[string]float64{}, CheckMsP90: map[string]float64{},
		RoundMedians: map[string]string{}, WALBytesPerCheck: map[string]float64{},
		RetentionSeconds: map[string]float64{}, RetentionWAL: map[string]float64{},
		LinksBytesPerRow: map[string]float64{}, UpdateBytesPerRow: map[string]float64{}}

	var schemas []*schema
	for _, name := range []string{"plain", "hash"} {
		s, err := createDatabase(ctx, o.adminURL, prefix+"_"+name, log)
		if s != nil {
			defer s.drop(o.adminURL, log)
		}
		if err != nil {
			return res, err
		}
		s.name = name
		schemas = append(schemas, s)
	}
	for _, s := range schemas {
		version := int64(5)
		if s.name == "hash" {
			version = 6
		}
		start := time.Now()
		err := s.fill(ctx, o, version)
		if err != nil {
			return res, fmt.Errorf("fill %s: %w", s.name, err)
		}
		res.FillSeconds[s.name] = round(time.Since(start).Seconds(), 1)
		if res.LinksBytesPerRow[s.name], res.UpdateBytesPerRow[s.name], err = s.bytesPerRow(ctx); err != nil {
			return res, err
		}
		log.Info("filled", "schema", s.name, "links", o.links, "updates", o.updates, "elapsed_s", res.FillSeconds[s.name])
	}

	times := map[string][]float64{}
	for r := range o.rounds {
		for _, s := range schemas {
			ms, wal, err := s.checks(ctx, o, r)
			if err != nil {
				return res, fmt.Errorf("checks on %s: %w", s.name, err)
			}
			times[s.name] = append(times[s.name], ms...)
			res.RoundMedians[s.name] = strings.TrimPrefix(res.RoundMedians[s.name]+fmt.Sprintf(" / %.3f", quantile(ms, 0.5)), " / ")
			perCheck := wal / float64(len(ms))
			if old, ok := res.WALBytesPerCheck[s.name]; !ok || perCheck < old {
				res.WALBytesPerCheck[s.name] = math.Round(perCheck)
			}
			log.Info("check round", "schema", s.name, "round", r+1, "median_ms", quantile(ms, 0.5), "wal_bytes_per_check", math.Round(perCheck))
		}
	}
	for _, s := range schemas {
		res.CheckMsMedian[s.name] = round(quantile(times[s.name], 0.5), 3)
		res.CheckMsP90[s.name] = round(quantile(times[s.name], 0.9), 3)
		if err := s.explain(ctx, log); err != nil {
			return res, fmt.Errorf("explain on %s: %w", s.name, err)
		}
	}
	res.Ratio = round(res.CheckMsMedian["hash"]/res.CheckMsMedian["plain"], 2)

	for _, s := range schemas {
		rows, secs, wal, err := s.retention(ctx)
		if err != nil {
			return res, fmt.Errorf("retention on %s: %w", s.name, err)
		}
		res.RetentionRows = rows
		res.RetentionSeconds[s.name] = round(secs, 3)
		res.RetentionWAL[s.name] = wal
		log.Info("retention", "schema", s.name, "rows", rows, "elapsed_s", round(secs, 3), "wal_bytes", wal)
	}
	return res, nil
}

func createDatabase(ctx context.Context, adminURL, name string, log *slog.Logger) (*schema, error) {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, fmt.Errorf("parse -postgres: %w", err)
	}
	u.Path = "/" + name
	s := &schema{dsn: u.String()}
	log.Info("database created", "name", name)
	if s.st, err = store.Open(ctx, s.dsn); err != nil {
		return s, err
	}
	if s.pool, err = pgxpool.New(ctx, s.dsn); err != nil {
		return s, fmt.Errorf("open pool on %s: %w", name, err)
	}
	return s, nil
}

// drop closes the schema's connections and drops its database; it runs on
// every exit, so it has its own context.
func (s *schema) drop(adminURL string, log *slog.Logger) {
	if s.st != nil {
		s.st.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, _ := url.Parse(s.dsn)
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		log.Error("drop database: connect", "name", name, "err", err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		log.Error("drop database", "name", name, "err", err)
		return
	}
	log.Info("database dropped", "name", name)
}

// fill migrates the database to version and fills pages, links and updates.
// Keys are hashtextextended of the page and link number: spread over 64
// bits like the real SHA-256 keys, so index inserts land where they would.
func (s *schema) fill(ctx context.Context, o options, version int64) error {
	db, err := sql.Open("pgx", s.dsn)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrate to %d: %w", version, err)
	}
	s.pages = o.links / o.linksPerPage
	steps := []string{
		fmt.Sprintf(`INSERT INTO pages (base_url, baseline_at, links_seen_at, last_checked_at)
			SELECT 'https://www.portal-' || g || '.example/', now() - interval '40 days', now(), now() - interval '1 day'
			FROM generate_series(1, %d) g`, s.pages),
		fmt.Sprintf(`INSERT INTO links (page_id, link_key, url, text, code, first_seen_at, last_seen_at)
			SELECT p, hashtextextended(p || '/' || i, 0),
				'https://www.portal-' || p || '.example/section/article-' || i || '-lorem-ipsum-dolor.html',
				'Headline number ' || i || ' of portal ' || p || ', a few words long',
				lpad(to_hex(i), 8, '0'), now() - interval '40 days', now()
			FROM generate_series(1, %d) p, generate_series(1, %d) i`, s.pages, o.linksPerPage),
	}
	if version >= 6 {
		// The partitions of the four past weeks, named as the pruner names
		// them, so the fill does not go through updates_default.
		steps = append(steps, `DO $$ BEGIN
			FOR w IN 1..5 LOOP
				EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF updates FOR VALUES FROM (%L) TO (%L)',
					'updates_w' || to_char(date_trunc('week', now(), 'UTC') AT TIME ZONE 'UTC' - w * interval '1 week', 'YYYYMMDD'),
					date_trunc('week', now(), 'UTC') - w * interval '1 week',
					date_trunc('week', now(), 'UTC') - (w - 1) * interval '1 week');
			END LOOP; END $$`)
	}
	// Updates over weeks -5 to -2, the same rows in both schemas.
	steps = append(steps, fmt.Sprintf(`INSERT INTO updates (page_id, link_key, url, text, code, discovered_at)
		SELECT 1 + g %% %d, hashtextextended('u' || g, 0), 'https://www.portal.example/u/' || g,
			'Update headline ' || g || ' with some words', lpad(to_hex(g), 8, '0'),
			date_trunc('week', now(), 'UTC') - interval '5 weeks' + (g::float8 / %d) * interval '4 weeks'
		FROM generate_series(0, %d) g`, s.pages, o.updates, o.updates-1),
		`ANALYZE`)
	for _, q := range steps {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
	}
	return nil
}

// checks records o.checks checks of random pages, each with the page's
// links and o.newPerCheck new ones, and returns each check's milliseconds
// and the WAL the whole batch wrote.
func (s *schema) checks(ctx context.Context, o options, round int) ([]float64, float64, error) {
	rng := mrand.New(mrand.NewPCG(uint64(round), 14))
	type prepared struct {
		page  int64
		links []watch.NewLink
	}
	batch := make([]prepared, o.checks)
	for i := range batch {
		page := int64(1 + rng.IntN(s.pages))
		rows, err := s.pool.Query(ctx, `SELECT link_key, url, text, code FROM links WHERE page_id = $1`, page)
		if err != nil {
			return nil, 0, fmt.Errorf("read links of page %d: %w", page, err)
		}
		links, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.NewLink, error) {
			var l watch.NewLink
			var key int64
			err := r.Scan(&key, &l.URL, &l.Text, &l.Code)
			l.Key = uint64(key)
			return l, err
		})
		if err != nil {
			return nil, 0, fmt.Errorf("read links of page %d: %w", page, err)
		}
		for range o.newPerCheck {
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, 0, err
			}
			n := rng.Int()
			links = append(links, watch.NewLink{Key: binary.LittleEndian.Uint64(b[:]),
				URL:  fmt.Sprintf("https://www.portal-%d.example/new/%d-a-fresh-story.html", page, n),
				Text: fmt.Sprintf("A fresh headline %d of portal %d", n, page), Code: hex.EncodeToString(b[:4])})
		}
		batch[i] = prepared{page, links}
	}
	walBefore, err := s.lsn(ctx)
	if err != nil {
		return nil, 0, err
	}
	ms := make([]float64, 0, len(batch))
	for _, c := range batch {
		start := time.Now()
		rec, err := s.st.RecordCheck(ctx, watch.Check{PageID: c.page, FetchedAt: time.Now(), Status: 200}, c.links)
		if err != nil {
			return nil, 0, err
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		if len(rec.Updates) != o.newPerCheck {
			return nil, 0, fmt.Errorf("check of page %d recorded %d updates, want %d", c.page, len(rec.Updates), o.newPerCheck)
		}
	}
	walAfter, err := s.lsn(ctx)
	if err != nil {
		return nil, 0, err
	}
	return ms, walAfter - walBefore, nil
}

// bytesPerRow returns the bytes of links and of updates, indexes and TOAST
// included, per row.
func (s *schema) bytesPerRow(ctx context.Context) (links, updates float64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['links'::regclass] || coalesce(
			(SELECT array_agg(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'links'::regclass), '{}')) c)
			/ (SELECT count(*) FROM links),
		(SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['updates'::regclass] || coalesce(
			(SELECT array_agg(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'updates'::regclass), '{}')) c)
			/ (SELECT count(*) FROM updates)`).Scan(&links, &updates)
	if err != nil {
		return 0, 0, fmt.Errorf("measure table sizes: %w", err)
	}
	return math.Round(links), math.Round(updates), nil
}

func (s *schema) lsn(ctx context.Context) (float64, error) {
	var b float64
	if err := s.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&b); err != nil {
		return 0, fmt.Errorf("read WAL position: %w", err)
	}
	return b, nil
}

// explain logs the plans the check relies on: the probe of a page's links
// and the insert, each kept to one partition of links by page_id.
func (s *schema) explain(ctx context.Context, log *slog.Logger) error {
	keys := make([]int64, 300)
	for i := range keys {
		keys[i] = int64(i) * 7919
	}
	for _, q := range []string{
		`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
			SELECT count(*) FROM unnest($2::bigint[]) k WHERE NOT EXISTS (SELECT 1 FROM links WHERE page_id = $1 AND link_key = k)`,
		`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
			INSERT INTO links (page_id, link_key, url, text, code) SELECT $1, k, 'u', 't', 'c' FROM unnest($2::bigint[]) k
			ON CONFLICT DO NOTHING`,
	} {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, q, int64(1+s.pages/2), keys)
		if err != nil {
			tx.Rollback(ctx)
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		tx.Rollback(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
		fmt.Fprintf(os.Stderr, "-- %s: %s\n%s\n", s.name, strings.TrimSpace(strings.SplitN(q, "\n", 2)[1]), strings.Join(lines, "\n"))
	}
	return nil
}

// retention removes the oldest of the four filled weeks: on the plain
// schema with the batched DELETE the pruner ran before 00006 (1,000 rows a
// statement, oldest first), on the partitioned one with the pruner's
// MaintainUpdatePartitions. It returns the rows removed, the seconds and the
// WAL written.
func (s *schema) retention(ctx context.Context) (int64, float64, float64, error) {
	var cutoff time.Time
	var retention time.Duration
	if err := s.pool.QueryRow(ctx, `SELECT date_trunc('week', now(), 'UTC') - interval '4 weeks'`).Scan(&cutoff); err != nil {
		return 0, 0, 0, err
	}
	retention = time.Since(cutoff)
	var rows int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM updates WHERE discovered_at < $1`, cutoff).Scan(&rows); err != nil {
		return 0, 0, 0, err
	}
	before, err := s.lsn(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	if s.name == "hash" {
		ch, err := s.st.MaintainUpdatePartitions(ctx, retention, 3)
		if err != nil {
			return 0, 0, 0, err
		}
		if len(ch.Dropped) != 1 {
			return 0, 0, 0, fmt.Errorf("maintenance dropped %v, want the one oldest week", ch.Dropped)
		}
	} else {
		for {
			tag, err := s.pool.Exec(ctx, `DELETE FROM updates WHERE id IN (
				SELECT id FROM updates WHERE discovered_at < $1 ORDER BY discovered_at LIMIT 1000 FOR UPDATE SKIP LOCKED)`, cutoff)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("delete old updates: %w", err)
			}
			if tag.RowsAffected() < 1000 {
				break
			}
		}
	}
	secs := time.Since(start).Seconds()
	after, err := s.lsn(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	var left int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM updates WHERE discovered_at < $1`, cutoff).Scan(&left); err != nil {
		return 0, 0, 0, err
	}
	if left != 0 {
		return 0, 0, 0, fmt.Errorf("%d expired updates left", left)
	}
	return rows, secs, after - before, nil
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func firstLine(q string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(q), "\n")
	return line
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
