package pwbench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// redisMemory is the memory the seen-set costs per link.
type redisMemory struct {
	links, pages int
	infoDelta    int64   // INFO memory used_memory after − before
	perLinkInfo  float64 // infoDelta / links
	usageSum     int64   // Σ MEMORY USAGE of the keys written
	perLinkUsage float64
	keys         int
	seconds      float64
}

// measureRedisMemory fills the seen-set with links links spread evenly over
// pages pages through package seen, exactly as the processor does after a
// page's baseline commits (one Add of all the page's codes), and measures
// Redis's memory before and after. Driving package seen directly measures
// the same keys and encodings as the processor would write, without having
// to crawl 5,000 pages first. The keys are removed afterwards.
//
// INFO's used_memory is server-wide: on a shared Redis, other clients' keys
// move it too, so the sum of MEMORY USAGE over the keys written is reported
// beside it.
func measureRedisMemory(ctx context.Context, redisURL, prefix string, links, pages int) (redisMemory, error) {
	m := redisMemory{links: links, pages: pages}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return m, err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	set, err := seen.Open(redisURL, seen.Config{Prefix: prefix, Epoch: "mem", TTL: time.Hour})
	if err != nil {
		return m, err
	}
	defer set.Close()
	defer func() { _ = testsvc.DropKeys(context.WithoutCancel(ctx), redisURL, prefix) }()

	before, err := redisUsedMemory(ctx, rdb)
	if err != nil {
		return m, err
	}
	start := time.Now()
	perPage := links / pages
	codes := make([]uint64, perPage)
	for p := range pages {
		for j := range codes {
			key := shortlink.Key("https://portal-" + strconv.Itoa(p) + ".example/news/" + strconv.Itoa(j) + "-story.html")
			codes[j] = processor.SeenCode(key, "Story "+strconv.Itoa(j)+" of the day")
		}
		if err := set.Add(ctx, int64(p+1), codes); err != nil {
			return m, err
		}
	}
	m.seconds = time.Since(start).Seconds()
	after, err := redisUsedMemory(ctx, rdb)
	if err != nil {
		return m, err
	}
	m.infoDelta = after - before
	m.perLinkInfo = float64(m.infoDelta) / float64(perPage*pages)
	m.usageSum, m.keys, err = memoryUsage(ctx, rdb, prefix)
	m.perLinkUsage = float64(m.usageSum) / float64(perPage*pages)
	return m, err
}

// memoryUsage sums MEMORY USAGE (all samples) over the keys under prefix.
func memoryUsage(ctx context.Context, rdb *redis.Client, prefix string) (int64, int, error) {
	var sum int64
	keys := 0
	iter := rdb.Scan(ctx, 0, prefix+":*", 5000).Iterator()
	var batch []string
	flush := func() error {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.MemoryUsage(ctx, k, 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range cmds {
			sum += c.(*redis.IntCmd).Val()
		}
		keys += len(batch)
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, 0, err
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	return sum, keys, nil
}

func (m redisMemory) print(w io.Writer) {
	fmt.Fprintf(w, "Redis seen-set: %d links over %d pages (%d keys), filled in %.1fs\n", m.links, m.pages, m.keys, m.seconds)
	fmt.Fprintf(w, "  INFO used_memory delta  %10d B  = %5.2f B/link\n", m.infoDelta, m.perLinkInfo)
	fmt.Fprintf(w, "  Σ MEMORY USAGE of keys  %10d B  = %5.2f B/link\n", m.usageSum, m.perLinkUsage)
}

// runRedis is "pwbench redis": the seen-set memory measurement alone.
func runRedis(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pwbench redis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc services
	svc.flags(fs)
	links := fs.Int("links", 1_000_000, "links to add")
	pages := fs.Int("pages", 5000, "pages they are spread over")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if err := svc.checkLoopback(); err != nil {
		return err
	}
	m, err := measureRedisMemory(ctx, svc.RedisURL, "pwbench:"+newID(), *links, *pages)
	if err != nil {
		return err
	}
	m.print(stdout)
	return printJSON(stdout, map[string]any{
		"redis_bytes_per_link": round3(m.perLinkInfo), "redis_bytes_per_link_usage": round3(m.perLinkUsage),
		"links": m.links, "pages": m.pages,
	})
}
