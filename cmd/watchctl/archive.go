package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type archiveCmd struct {
	List   archiveListCmd   `cmd:"" help:"List a page's snapshots, newest first: when, what the check found, where the records are."`
	Export archiveExportCmd `cmd:"" help:"Write every snapshot of a page into one gzip WARC file, readable by standard WARC tools."`
	Sweep  archiveSweepCmd  `cmd:"" help:"Sweep the archive now, as the processors do every PORTALWATCH_ARCHIVE_SWEEP_INTERVAL."`
}

// maxSnapshots bounds what one command reads of a page's index.
const maxSnapshots = 100_000

type archiveListCmd struct {
	ID      string `arg:"" name:"page-id" help:"The page's id (see watchctl list), or an article's with --article."`
	Limit   int    `default:"100" help:"Print at most this many."`
	Article bool   `help:"The id is an article's (see watchctl article): list the snapshots of its page's fetches."`
}

// Run prints a page's snapshots.
func (v *archiveListCmd) Run(c *cli) error {
	id, err := parseID(v.ID)
	if err != nil {
		return err
	}
	if v.Limit <= 0 || v.Limit > maxSnapshots {
		return usagef("--limit %d: want 1 to %d", v.Limit, maxSnapshots)
	}
	snaps, err := c.snapshots(id, v.Article, v.Limit)
	if err != nil {
		return err
	}
	if len(snaps) == 0 && v.Article {
		fmt.Fprintf(c.stdout, "article %d has no archived snapshot: article pages are archived with PORTALWATCH_ARCHIVE on for the extractor\n", id)
		return nil
	}
	if len(snaps) == 0 {
		fmt.Fprintf(c.stdout, "page %d has no archived snapshot: a check is archived when it finds something, with PORTALWATCH_ARCHIVE on\n", id)
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tFETCHED\tSTATUS\tFOUND\tBYTES\tSTORED\tRECORD")
	for _, s := range snaps {
		stored := "payload"
		if s.Revisit() {
			stored = "revisit of " + s.Original.RecordID
		}
		if s.Ref.RenderedBytes > 0 {
			stored += fmt.Sprintf(", rendered DOM of %d bytes", s.Ref.RenderedBytes)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s %s@%d\n", s.ID, localTime(&s.FetchedAt), s.Ref.Status, found(s), s.Ref.PayloadBytes,
			stored, s.Ref.RecordID, s.Ref.File, s.Ref.Offset)
	}
	return tw.Flush()
}

// found says what the snapshot's check recorded.
func found(s watch.Snapshot) string {
	if s.Baseline {
		return "baseline"
	}
	if s.Updates == 0 && s.Revisions == 0 && s.Removals == 0 {
		// Kept as the page its later removals are shown with.
		return "links changed, none new"
	}
	return fmt.Sprintf("%d new, %d revised, %d removed", s.Updates, s.Revisions, s.Removals)
}

// snapshots returns the snapshots of page id (or article id), newest
// first, or a usage error for one that does not exist.
func (c *cli) snapshots(id int64, isArticle bool, limit int) ([]watch.Snapshot, error) {
	st, err := c.open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if isArticle {
		if _, err := st.Article(c.ctx, id); errors.Is(err, watch.ErrArticleNotFound) {
			return nil, usagef("no article has id %d (see `watchctl updates --json`)", id)
		} else if err != nil {
			return nil, err
		}
		snaps, err := st.ArticleSnapshots(c.ctx, id)
		return snaps[:min(len(snaps), limit)], err
	}
	if _, err := st.Page(c.ctx, id); errors.Is(err, watch.ErrPageNotFound) {
		return nil, usagef("no watched page has id %d (see `watchctl list`)", id)
	} else if err != nil {
		return nil, err
	}
	return st.Snapshots(c.ctx, id, limit)
}

type archiveExportCmd struct {
	ID      string `arg:"" name:"page-id" help:"The page's id (see watchctl list), or an article's with --article."`
	File    string `arg:"" name:"file" help:"The WARC file to write, such as page-7.warc.gz; it must not exist yet."`
	Article bool   `help:"The id is an article's: export the snapshots of its page's fetches."`
}

// Run writes every snapshot of a page, oldest first, into one WARC file.
func (v *archiveExportCmd) Run(c *cli) error {
	id, err := parseID(v.ID)
	if err != nil {
		return err
	}
	snaps, err := c.snapshots(id, v.Article, maxSnapshots)
	if err != nil {
		return err
	}
	if len(snaps) == 0 {
		return usagef("%s %d has no archived snapshot to export", kindOf(v.Article), id)
	}
	for i, j := 0, len(snaps)-1; i < j; i, j = i+1, j-1 {
		snaps[i], snaps[j] = snaps[j], snaps[i]
	}
	files, err := archive.NewFS(c.cfg.Archive.Directory())
	if err != nil {
		return err
	}
	f, err := os.OpenFile(v.File, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return usagef("%s exists already: name a new file", v.File)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := archive.Export(c.ctx, files, filepath.Base(v.File), snaps, f); err != nil {
		f.Close()
		os.Remove(v.File)
		return fmt.Errorf("%w (is PORTALWATCH_ARCHIVE_DIR %s the crawlers' archive?)", err, c.cfg.Archive.Directory())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(c.stdout, "wrote %d snapshots of %s %d to %s\n", len(snaps), kindOf(v.Article), id, v.File)
	return nil
}

type archiveSweepCmd struct{}

// Run sweeps the archive once.
func (v *archiveSweepCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	files, err := archive.NewFS(c.cfg.Archive.Directory())
	if err != nil {
		return err
	}
	res, err := archive.Sweep(c.ctx, files, st, c.cfg.Archive.Sweep(), time.Now(), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "archive %s: %d snapshots past retention and %d over the cap deleted; %d files sealed, %d removed, %d compacted; %d bytes freed, %d bytes before\n",
		c.cfg.Archive.Directory(), res.Expired, res.Evicted, res.Sealed, res.Removed, res.Compacted, res.FreedBytes, res.Bytes)
	return nil
}

// kindOf names what an archive command's id is.
func kindOf(isArticle bool) string {
	if isArticle {
		return "article"
	}
	return "page"
}
