package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/queue"
)

const deadUsage = `usage: watchctl dead list [--queue job|task|all] [--limit 20] [--json]
       watchctl dead requeue [--queue job|task|all] [--limit 1000]
       watchctl dead purge [--queue job|task|all]`

// dead shows and handles the dead-letter queues: messages that could not be
// decoded, or that failed again and again.
func (c *cli) dead(args []string) error {
	if len(args) == 0 {
		return usagef("%s", deadUsage)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("dead "+sub, flag.ContinueOnError)
	which := fs.String("queue", "all", "job, task or all")
	limit := fs.Int("limit", 0, "at most this many messages")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q\n%s", pos[0], deadUsage)
	}
	var queues []string
	switch *which {
	case "job":
		queues = []string{c.cfg.JobQueue}
	case "task":
		queues = []string{c.cfg.TaskQueue}
	case "all":
		queues = []string{c.cfg.JobQueue, c.cfg.TaskQueue}
	default:
		return usagef("--queue %q: want job, task or all", *which)
	}
	qcfg := proc.QueueConfig(c.cfg, "watchctl")
	dead := queue.NewDead(qcfg)
	switch sub {
	case "list":
		if *limit <= 0 {
			*limit = 20
		}
		return c.deadList(dead, queues, *limit, *asJSON)
	case "requeue":
		if *limit <= 0 {
			*limit = 1000
		}
		pub := queue.NewPublisher(qcfg, slog.New(slog.DiscardHandler), queues...)
		defer pub.Close()
		for _, q := range queues {
			n, err := dead.Requeue(c.ctx, q, *limit, pub)
			if err != nil {
				return fmt.Errorf("%w (%d moved before the error)", err, n)
			}
			fmt.Fprintf(c.stdout, "requeued %d messages from %s to %s\n", n, queue.DeadLetterQueue(q), q)
		}
		return nil
	case "purge":
		for _, q := range queues {
			n, err := dead.Purge(q)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "purged %d messages from %s\n", n, queue.DeadLetterQueue(q))
		}
		return nil
	}
	return usagef("unknown subcommand %q\n%s", sub, deadUsage)
}

func (c *cli) deadList(dead *queue.Dead, queues []string, limit int, asJSON bool) error {
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		defer tw.Flush()
	}
	for _, q := range queues {
		total, err := dead.Count(q)
		if err != nil {
			return err
		}
		letters, err := dead.List(q, limit)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(c.stdout)
			enc.SetEscapeHTML(false)
			for _, d := range letters {
				if err := enc.Encode(map[string]any{"queue": d.Queue, "reason": d.Reason, "dead_at": d.DeadAt, "body": string(d.Body)}); err != nil {
					return err
				}
			}
			continue
		}
		fmt.Fprintf(tw, "%s: %d messages\n", queue.DeadLetterQueue(q), total)
		if len(letters) == 0 {
			continue
		}
		fmt.Fprintln(tw, "  DEAD AT\tREASON\tMESSAGE")
		for _, d := range letters {
			at := "-"
			if !d.DeadAt.IsZero() {
				at = d.DeadAt.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", at, oneLine(d.Reason), preview(d.Body))
		}
	}
	return nil
}

func preview(body []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "\uFFFD")), " ")
	if utf8.RuneCountInString(s) > 80 {
		return string([]rune(s)[:77]) + "..."
	}
	return s
}
