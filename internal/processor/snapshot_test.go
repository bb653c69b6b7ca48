package processor

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestSnapshotRefsThatMustNotBeIndexed(t *testing.T) {
	svc, err := New(Config{ArchiveGrace: 2 * time.Hour}, nil, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	good := watch.SnapshotRef{File: "portalwatch-20261203-host-1-00001.warc.gz", Offset: 10, Length: 300, RecordID: "urn:uuid:x",
		PayloadDigest: "sha1:ABC", CheckID: watch.NewCheckID(), TargetURI: "https://a.example/\x00", WrittenAt: time.Now()}
	for _, tc := range []struct {
		name string
		edit func(*watch.SnapshotRef)
		ok   bool
	}{
		{"whole and fresh", func(*watch.SnapshotRef) {}, true},
		{"older than half the grace: the sweep may have taken its file", func(r *watch.SnapshotRef) { r.WrittenAt = time.Now().Add(-61 * time.Minute) }, false},
		{"a path for a file name", func(r *watch.SnapshotRef) { r.File = "../etc/passwd" }, false},
		{"no length", func(r *watch.SnapshotRef) { r.Length = 0 }, false},
		{"a check id that is no UUID", func(r *watch.SnapshotRef) { r.CheckID = "x'; DROP" }, false},
	} {
		ref := good
		tc.edit(&ref)
		got := svc.snapshotOf(svc.log, watch.Task{Snapshot: &ref})
		if (got != nil) != tc.ok {
			t.Errorf("%s: indexed %v, want %v", tc.name, got != nil, tc.ok)
		}
		if got != nil && got.TargetURI != "https://a.example/" {
			t.Errorf("%s: target URI %q not cleaned", tc.name, got.TargetURI)
		}
	}
}
