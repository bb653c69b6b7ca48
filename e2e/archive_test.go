package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/testkit/warcread"
)

// TestArchiveKeepsWhatTheFarmSent runs the real programs over a farm whose
// pages gain links every round, kills the crawler (SIGKILL) once the first
// snapshots are indexed and starts another, then exports each page's
// snapshots with watchctl and reads the WARC file with an independent
// reader: a baseline and one snapshot per round, every digest right,
// every payload byte for byte a body the farm sent to that page. The
// killed crawler's file stays open, for the sweep.
func TestArchiveKeepsWhatTheFarmSent(t *testing.T) {
	t.Parallel()
	const rounds = 3
	sys := newSystem(t)
	farm := systest.NewFarm(t, 2)
	farm.KeepSent()
	ids, err := farm.Register(sys.System)
	if err != nil {
		t.Fatal(err)
	}
	sys.start("scheduler")
	crawler := sys.start("crawler")
	sys.start("processor")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	driven := make(chan error, 1)
	go func() {
		driven <- farm.Drive(ctx, sys.System, ids, rounds, 300*time.Millisecond, 30*time.Second, t.Logf)
	}()
	err = testsvc.Poll(ctx, time.Minute, 20*time.Millisecond, func() (bool, string, error) {
		var n int
		err := sys.db.QueryRow(ctx, `SELECT count(*) FROM snapshots`).Scan(&n)
		return n > 0, "no snapshot yet", err
	})
	if err != nil {
		t.Fatalf("waiting for the first snapshot: %v", err)
	}
	crawler.Kill()
	sys.start("crawler")
	if err := <-driven; err != nil {
		t.Fatal(err)
	}
	open, err := filepath.Glob(filepath.Join(sys.DataDir, "archive", "*.warc.gz.open"))
	if err != nil || len(open) == 0 {
		t.Fatalf("no open file left by the killed crawler in %s (%v)", sys.DataDir, err)
	}
	for i, id := range ids {
		var n, found int
		if err := sys.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE baseline OR updates > 0) FROM snapshots WHERE page_id = $1`, id).Scan(&n, &found); err != nil {
			t.Fatal(err)
		}
		// Checks that only saw links go are indexed too (for the removals
		// they lead to), so found may be fewer than n.
		if n < rounds+1 || found < rounds+1 {
			t.Fatalf("page %d has %d snapshots, %d of checks that found news: want the baseline and one a round (%d)", id, n, found, rounds)
		}
		list, err := sys.watchctl("archive", "list", strconv.FormatInt(id, 10))
		if err != nil || strings.Count(list, "baseline") != 1 || strings.Count(list, "new,") < rounds {
			t.Fatalf("watchctl archive list: %v\n%s", err, list)
		}
		file := filepath.Join(t.TempDir(), "page.warc.gz")
		if out, err := sys.watchctl("archive", "export", strconv.FormatInt(id, 10), file); err != nil {
			t.Fatalf("watchctl archive export: %v\n%s", err, out)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sent := farm.Sent(i)
		responses := 0
		for _, r := range warcread.Read(t, data) {
			switch r.Header.Get("WARC-Type") {
			case "response":
				responses++
				if !sentOnce(sent, r.Payload) {
					t.Fatalf("page %d: a stored payload of %d bytes is not a body the farm sent", id, len(r.Payload))
				}
				line, h, err := warcread.HTTPHead(r.Block)
				if err != nil || line != "HTTP/1.1 200 OK" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
					t.Fatalf("response head %q %v %v", line, h, err)
				}
			case "metadata":
				if !bytes.Contains(r.Block, []byte("portalwatch-page-id: "+strconv.FormatInt(id, 10)+"\r\n")) || !bytes.Contains(r.Block, []byte("portalwatch-check-id: ")) {
					t.Fatalf("metadata record %q", r.Block)
				}
			}
		}
		if responses != n {
			t.Fatalf("page %d: the export holds %d responses for %d snapshots", id, responses, n)
		}
	}
}

func sentOnce(sent [][]byte, payload []byte) bool {
	for _, b := range sent {
		if bytes.Equal(b, payload) {
			return true
		}
	}
	return false
}
