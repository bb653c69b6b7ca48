package processor

import (
	"log/slog"
	"regexp"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// archiveFileName is the form of an archive file's name, as the index
// stores it (migration 00025).
var archiveFileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)

// checkID is the form of a check id, a UUID.
var checkID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// snapshotOf returns the task's snapshot ref to index with its check, nil
// when it has none or one that must not be indexed: malformed (a crawler
// of another build, a hand-made task), or written so long ago that the
// archive sweep may have reclaimed its file (half of Config.ArchiveGrace;
// the records then stay unindexed, and the sweep takes them). A bad ref
// costs the check its snapshot, never the check.
func (s *Service) snapshotOf(log *slog.Logger, task watch.Task) *watch.SnapshotRef {
	ref := task.Snapshot
	if ref == nil {
		return nil
	}
	switch {
	case !archiveFileName.MatchString(ref.File) || ref.Offset < 0 || ref.Length <= 0 || ref.RecordID == "" ||
		ref.PayloadDigest == "" || !checkID.MatchString(ref.CheckID) || ref.WrittenAt.IsZero():
		s.metrics.snapshots.WithLabelValues("malformed").Inc()
		log.Warn("task's snapshot ref is malformed; the check is recorded without it", "file", watch.CleanText(ref.File))
		return nil
	case time.Since(ref.WrittenAt) > s.cfg.ArchiveGrace/2:
		s.metrics.snapshots.WithLabelValues("late").Inc()
		log.Warn("task's snapshot is older than half the archive grace; the check is recorded without it",
			"written_at", ref.WrittenAt, "grace", s.cfg.ArchiveGrace)
		return nil
	}
	clean := *ref
	clean.TargetURI, clean.ContentType = watch.CleanText(ref.TargetURI), watch.CleanText(ref.ContentType)
	clean.RecordID, clean.PayloadDigest, clean.RevisitOf = watch.CleanText(ref.RecordID), watch.CleanText(ref.PayloadDigest), watch.CleanText(ref.RevisitOf)
	return &clean
}
