//go:build chaos

package chaos

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// hostile serves pages that misbehave in every way the crawler must survive.
func hostile(t *testing.T) *httptest.Server {
	t.Helper()
	zeros := make([]byte, 1<<20)
	// 1 GiB of zeros as 1,024 gzip members of 1 MiB each: about 1 MiB on the
	// wire, built in milliseconds.
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(zeros)
	zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 1024)
	mux := http.NewServeMux()
	mux.HandleFunc("/timeout", func(w http.ResponseWriter, r *http.Request) {
		select { // never answers; gives up when the client does
		case <-r.Context().Done():
		case <-time.After(60 * time.Second):
		}
	})
	mux.HandleFunc("/drip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 120; i++ {
			if _, err := w.Write([]byte("<")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>"))
		for range 1024 { // 1 GiB, if anyone read it all
			if _, err := w.Write(zeros); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(zeros[:4096])
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBadPagesAndBadMessages registers hostile pages beside healthy ones and
// feeds the queues messages that can never be handled: each bad page gets a
// recorded error, each bad message a dead letter with its reason, memory stays
// bounded, and the healthy pages keep flowing without a single lost update.
func TestBadPagesAndBadMessages(t *testing.T) {
	sys := systest.New(t, binDir, systest.Shared(), "PORTALWATCH_FETCH_TIMEOUT=3s", "PORTALWATCH_MAX_BODY_BYTES=5242880")
	farm := systest.NewFarm(t, 10)
	ids, err := farm.Register(sys)
	if err != nil {
		t.Fatal(err)
	}
	bad := hostile(t)
	badIDs := map[string]int64{}
	for _, path := range []string{"/timeout", "/drip", "/huge", "/bomb", "/binary", "/gone"} {
		out, err := sys.Watchctl("add", bad.URL+path, "--interval", "10s")
		if err != nil {
			t.Fatalf("add %s: %v %s", path, err, out)
		}
		var id int64
		fmt.Sscanf(out, "watching page %d:", &id)
		badIDs[path] = id
	}
	sys.Start("scheduler")
	crawler := sys.Start("crawler", "PORTALWATCH_CRAWLER_CONCURRENCY=8")
	sys.Start("processor")

	// Messages no consumer can handle, and a task for a page that is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pub, err := queue.NewPublisher(queue.Config{URL: testsvc.AMQPURL()}, testsvc.Logger(t), sys.JobQueue, sys.TaskQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, m := range []struct{ q, body string }{
		{sys.JobQueue, `{"baseUrl": "http://x/", "id": "seven"}`},
		{sys.JobQueue, `not json at all`},
		{sys.TaskQ, `{"id": 3}`},
		{sys.TaskQ, `{"baseUrl":"http://removed.example/","id":987654,"context":[{"url":"http://removed.example/a","text":"a"}],"status":200}`},
	} {
		if err := pub.Publish(ctx, m.q, watch.Message{Body: []byte(m.body)}); err != nil {
			t.Fatal(err)
		}
	}

	if err := farm.Drive(ctx, sys, ids, 5, 500*time.Millisecond, 60*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	v, err := farm.Check(ctx, sys)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("healthy pages beside hostile ones: %s", v)
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 {
		t.Errorf("healthy pages lost or gained updates: %s", v)
	}

	// Every hostile page has its own error on record.
	for path, id := range badIDs {
		testsvc.Eventually(t, 60*time.Second, "a recorded error of "+path, func() (bool, error) {
			var lastErr string
			if err := sys.DB.QueryRow(ctx, `SELECT coalesce(last_error, '') FROM pages WHERE id = $1`, id).Scan(&lastErr); err != nil {
				return false, err
			}
			if lastErr != "" {
				t.Logf("%-8s error: %s", path, lastErr)
			}
			return lastErr != "", nil
		})
	}

	dead, err := queue.NewDead(queue.Config{URL: testsvc.AMQPURL()})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{sys.JobQueue: 2, sys.TaskQ: 1} {
		letters, err := dead.List(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(letters) != want {
			t.Errorf("%s holds %d dead letters, want %d: %+v", queue.DeadLetterQueue(q), len(letters), want, letters)
		}
		for _, d := range letters {
			if !strings.Contains(d.Reason, "malformed") {
				t.Errorf("dead letter %q has reason %q, want it to say the message is malformed", d.Body, d.Reason)
			}
		}
	}

	rss := peakRSS(t, crawler.Pid())
	t.Logf("crawler peak RSS: %d MiB", rss>>20)
	if rss > 200<<20 {
		t.Errorf("crawler peak RSS %d MiB after a 1 GiB body and a gzip bomb, want under 200 MiB", rss>>20)
	}
}

func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
