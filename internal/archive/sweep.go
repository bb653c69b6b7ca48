package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Index is what the sweep needs of the snapshot index (PostgreSQL).
type Index interface {
	// SnapshotFileBytes returns the bytes of each file the index references.
	SnapshotFileBytes(ctx context.Context) (map[string]int64, error)
	// ExpireSnapshots deletes up to limit snapshots fetched before before.
	ExpireSnapshots(ctx context.Context, before time.Time, limit int) (int64, error)
	// EvictSnapshots deletes the oldest snapshots while the index
	// references more than maxBytes.
	EvictSnapshots(ctx context.Context, maxBytes int64, limit int) (int64, error)
	// SnapshotRanges returns the byte ranges of file the index references.
	SnapshotRanges(ctx context.Context, file string) ([][2]int64, error)
	// MoveSnapshots points the rows of file at their copies in to.
	MoveSnapshots(ctx context.Context, file, to string, moved map[int64]int64) error
}

// SweepConfig configures Sweep.
type SweepConfig struct {
	// Grace is how long a file stays untouched after it was sealed (or
	// last written, for a file left open by a writer that died) before the
	// sweep may delete or compact it: a check's task may wait in the queue
	// that long before its records are indexed. The processor indexes no
	// ref older than half of it. Default DefaultGrace, 24h.
	Grace time.Duration
	// Retention deletes snapshots fetched longer ago; zero keeps them.
	Retention time.Duration
	// MaxBytes caps the bytes the index references; the oldest snapshots
	// past it are deleted. Zero: no cap.
	MaxBytes int64
	// Compact is the share of a sealed file's bytes under which its live
	// records are copied into a new file and it is deleted. Default 0.5.
	Compact float64
	// Batch bounds the rows one statement deletes. Default 10,000.
	Batch int
}

// DefaultGrace is SweepConfig.Grace's default.
const DefaultGrace = 24 * time.Hour

// SweepResult counts what one sweep did.
type SweepResult struct {
	Expired, Evicted  int64
	Sealed, Removed   int
	Compacted         int
	FreedBytes, Bytes int64
}

// Sweep reclaims the archive: it seals the files their writers left open
// (dead, or quiet past the grace), deletes the snapshots past retention or
// over the byte cap, deletes the sealed files past the grace that no
// snapshot references (records of checks that found nothing, or whose
// crawler died before its task), and compacts the sealed files whose
// referenced share is under Compact. Only files past the grace are
// touched, so a record still on its way to the index is never taken.
// Run one sweep at a time (the processors' retention lock).
func Sweep(ctx context.Context, store Store, index Index, cfg SweepConfig, now time.Time, log *slog.Logger) (SweepResult, error) {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Compact <= 0 {
		cfg.Compact = 0.5
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 10000
	}
	var res SweepResult
	var err error
	if cfg.Retention > 0 {
		if res.Expired, err = index.ExpireSnapshots(ctx, now.Add(-cfg.Retention), cfg.Batch); err != nil {
			return res, err
		}
	}
	if cfg.MaxBytes > 0 {
		if res.Evicted, err = index.EvictSnapshots(ctx, cfg.MaxBytes, cfg.Batch); err != nil {
			return res, err
		}
	}
	files, err := store.List(ctx)
	if err != nil {
		return res, err
	}
	// The index is read after the listing: a file sealed after it is not
	// in the list, and a row written after it is for a file within the
	// grace, which nothing here touches.
	live, err := index.SnapshotFileBytes(ctx)
	if err != nil {
		return res, err
	}
	cutoff := now.Add(-cfg.Grace)
	for _, f := range files {
		res.Bytes += f.Size
		if !f.Modified.Before(cutoff) {
			continue
		}
		if !f.Sealed {
			// Its writer died or went quiet past the grace: a writer
			// seals its files within WriterConfig.FileAge.
			if err := store.Seal(ctx, f.Name); err != nil {
				return res, err
			}
			res.Sealed++
			log.Info("archive file left open sealed", "file", f.Name)
			continue // swept from the next round on, its grace from now
		}
		used, ok := live[f.Name]
		switch {
		case !ok:
			if err := store.Remove(ctx, f.Name); err != nil {
				return res, err
			}
			res.Removed++
			res.FreedBytes += f.Size
		case float64(used) < cfg.Compact*float64(f.Size):
			freed, err := compact(ctx, store, index, f, now)
			if err != nil {
				return res, err
			}
			res.Compacted++
			res.FreedBytes += freed
		}
	}
	return res, nil
}

// compactPrefix starts the name of a file made by compaction.
const compactPrefix = "compact-"

// compact copies the ranges of f the index references into a new sealed
// file, points the index at them, and deletes f. A crash before the index
// moves leaves the copy unreferenced (the next sweeps delete it); after,
// f unreferenced (likewise): neither loses a record nor leaves a row
// without one.
func compact(ctx context.Context, store Store, index Index, f FileInfo, now time.Time) (int64, error) {
	ranges, err := index.SnapshotRanges(ctx, f.Name)
	if err != nil {
		return 0, err
	}
	base := f.Name
	if strings.HasPrefix(base, compactPrefix) && len(base) > len(compactPrefix)+15 {
		base = base[len(compactPrefix)+15:] // compacted again: one prefix
	}
	name := compactPrefix + now.UTC().Format("20060102150405") + "-" + base
	info, err := warcinfo(name, "portalwatch archive compaction", now.UTC())
	if err != nil {
		return 0, fmt.Errorf("compact %s: %w", f.Name, err)
	}
	var b bytes.Buffer
	if err := writeMember(&b, info, nil); err != nil {
		return 0, fmt.Errorf("compact %s: %w", f.Name, err)
	}
	head := b.Bytes()
	if _, err := store.Append(ctx, name, head); err != nil {
		return 0, fmt.Errorf("compact %s: %w", f.Name, err)
	}
	moved := map[int64]int64{}
	var kept int64
	for _, r := range ranges {
		rc, err := store.Open(ctx, f.Name, r[0], r[1])
		if err != nil {
			return 0, fmt.Errorf("compact %s: %w", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err == nil && int64(len(b)) != r[1] {
			err = fmt.Errorf("%w: %d of %d bytes at %d", ErrCorrupt, len(b), r[1], r[0])
		}
		if err != nil {
			return 0, fmt.Errorf("compact %s: %w", f.Name, err)
		}
		off, err := store.Append(ctx, name, b)
		if err != nil {
			return 0, fmt.Errorf("compact %s: %w", f.Name, err)
		}
		moved[r[0]] = off
		kept += r[1]
	}
	if err := store.Seal(ctx, name); err != nil {
		return 0, fmt.Errorf("compact %s: %w", f.Name, err)
	}
	if err := index.MoveSnapshots(ctx, f.Name, name, moved); err != nil {
		return 0, err
	}
	if err := store.Remove(ctx, f.Name); err != nil {
		return 0, errors.Join(fmt.Errorf("compact %s: the copy is indexed, the old file stays until the next sweep", f.Name), err)
	}
	return f.Size - kept - int64(len(head)), nil
}

// RunSweeps sweeps store every cfg.SweepInterval until ctx ends, the first
// time one interval after it starts. A failed sweep is logged and tried
// again at the next; it never stops the program.
func RunSweeps(ctx context.Context, store Store, index Index, cfg Config, log *slog.Logger) error {
	t := time.NewTicker(cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			res, err := Sweep(ctx, store, index, cfg.Sweep(), now, log)
			if err != nil {
				log.Warn("archive sweep failed; the next one tries again", "err", err)
				continue
			}
			log.Info("archive swept", "expired", res.Expired, "evicted", res.Evicted, "sealed", res.Sealed,
				"removed", res.Removed, "compacted", res.Compacted, "freed_bytes", res.FreedBytes, "bytes", res.Bytes)
		}
	}
}
