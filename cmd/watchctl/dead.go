package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
)

// deadCmd shows and handles the dead-letter queues: messages that could not
// be decoded, or that failed again and again.
type deadCmd struct {
	List    deadListCmd    `cmd:"" help:"Show the count, reasons and first messages of the dead-letter queues."`
	Requeue deadRequeueCmd `cmd:"" help:"Send dead-lettered messages back to their queue (after fixing the cause)."`
	Purge   deadPurgeCmd   `cmd:"" help:"Drop dead-lettered messages."`
}

// deadFlags are the flags every dead subcommand takes.
type deadFlags struct {
	Queue string `default:"all" enum:"job,task,all" help:"Which dead-letter queue: job, task or all."`
	Limit int    `help:"At most this many messages (list: 20, requeue: 1000)."`
	JSON  bool   `name:"json" help:"One JSON object per line (list)."`
}

// queues returns the work queues whose dead-letter queues f names.
func (f deadFlags) queues(c *cli) []string {
	switch f.Queue {
	case "job":
		return []string{c.cfg.Queues.Jobs}
	case "task":
		return []string{c.cfg.Queues.Tasks}
	}
	return []string{c.cfg.Queues.Jobs, c.cfg.Queues.Tasks}
}

func (f deadFlags) limit(byDefault int) int {
	if f.Limit <= 0 {
		return byDefault
	}
	return f.Limit
}

type deadListCmd struct {
	deadFlags `embed:""`
}

func (d *deadListCmd) Run(c *cli) error {
	dead, err := queue.NewDead(c.cfg.Broker.Named("watchctl"))
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	return c.deadList(dead, d.queues(c), d.limit(20), d.JSON)
}

type deadRequeueCmd struct {
	deadFlags `embed:""`
}

func (d *deadRequeueCmd) Run(c *cli) error {
	qcfg := c.cfg.Broker.Named("watchctl")
	dead, err := queue.NewDead(qcfg)
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	queues := d.queues(c)
	pub, err := queue.NewPublisher(qcfg, slog.New(slog.DiscardHandler), queues...)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	for _, q := range queues {
		n, err := dead.Requeue(c.ctx, q, d.limit(1000), pub)
		if err != nil {
			return fmt.Errorf("%w (%d moved before the error)", err, n)
		}
		fmt.Fprintf(c.stdout, "requeued %d %s from %s to %s\n", n, plural(n, "message", "messages"), queue.DeadLetterQueue(q), q)
	}
	return nil
}

type deadPurgeCmd struct {
	deadFlags `embed:""`
}

func (d *deadPurgeCmd) Run(c *cli) error {
	dead, err := queue.NewDead(c.cfg.Broker.Named("watchctl"))
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	for _, q := range d.queues(c) {
		n, err := dead.Purge(q)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "purged %d %s from %s\n", n, plural(n, "message", "messages"), queue.DeadLetterQueue(q))
	}
	return nil
}

func (c *cli) deadList(dead *queue.Dead, queues []string, limit int, asJSON bool) error {
	var tw *table
	if !asJSON {
		tw = newTable(c.stdout)
		defer tw.Flush()
	}
	for _, q := range queues {
		report, err := dead.Inspect(q, limit)
		if err != nil {
			return err
		}
		total, letters := report.Count, report.Letters
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
		fmt.Fprintf(tw, "%s: %d %s\n", queue.DeadLetterQueue(q), total, plural(total, "message", "messages"))
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

func preview(body []byte) string { return oneLine(strings.ToValidUTF8(string(body), "\uFFFD")) }
