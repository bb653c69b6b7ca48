package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// scriptedPortal serves at /rendered and /plain the same page, whose links
// a script inserts from /links.json; the page as fetched holds none. While
// stall is set, /links.json waits for it to be lifted, so that a test can
// kill a program with a page in the browser.
type scriptedPortal struct {
	*httptest.Server
	stories atomic.Int64
	asked   atomic.Int64 // /links.json requests
	mu      sync.Mutex
	stall   chan struct{} // nil: answer at once
	stalled chan struct{} // gets a value when a request waits on stall
}

func newScriptedPortal(t *testing.T) *scriptedPortal {
	p := &scriptedPortal{stalled: make(chan struct{}, 16)}
	p.stories.Store(2)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/links.json":
			p.asked.Add(1)
			p.mu.Lock()
			stall := p.stall
			p.mu.Unlock()
			if stall != nil {
				p.stalled <- struct{}{}
				select {
				case <-stall:
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			var items []string
			for i := p.stories.Load(); i > 0; i-- {
				items = append(items, fmt.Sprintf(`{"url":"/story/%d","text":"Story %d"}`, i, i))
			}
			fmt.Fprintf(w, "[%s]", strings.Join(items, ","))
		case "/rendered", "/plain":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!DOCTYPE html><html><head><title>Scripted news</title></head><body><main id="news"></main>
<script>
fetch('/links.json').then(r => r.json()).then(items => {
  const main = document.getElementById('news');
  for (const it of items) {
    const h = document.createElement('h2'), a = document.createElement('a');
    a.href = it.url; a.textContent = it.text; h.appendChild(a); main.appendChild(h);
  }
  main.setAttribute('data-ready', 'yes');
});
</script></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *scriptedPortal) setStall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.stall == nil {
		p.stall = make(chan struct{})
	} else if !on && p.stall != nil {
		close(p.stall)
		p.stall = nil
	}
}

// TestRenderedPageRecordsScriptedLinks: a page registered with --render is
// checked by the renderer, whose DOM holds the links the page's script
// inserts, and exactly its new links are recorded; the same page checked
// plainly finds none (control). Then the fault suite: Chromium killed under
// a page, and the renderer killed -9 under one; each check still happens
// exactly once in effect; and the renderer stopped gracefully under a page
// three times, which must not spend the page's deliveries.
func TestRenderedPageRecordsScriptedLinks(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	// A short drain, so that a graceful stop cuts a stalled render off.
	sys := newSystem(t, "PORTALWATCH_RENDER_IDLE=200ms", "PORTALWATCH_RENDER_PAGE_TIMEOUT=20s", "PORTALWATCH_SHUTDOWN_TIMEOUT=1s")
	portal := newScriptedPortal(t)
	rendered := sys.add(portal.URL+"/rendered", "--render", "--wait-for", "main[data-ready]")
	plain := sys.add(portal.URL + "/plain")
	sys.start("scheduler")
	sys.start("processor")
	sys.start("crawler")
	rend := sys.start("renderer")

	testsvc.Eventually(t, 90*time.Second, "both baselines", func() (bool, error) {
		a, err := sys.baselineDone(rendered)()
		if err != nil || !a {
			return false, err
		}
		return sys.baselineDone(plain)()
	})
	sys.checkSucceeded(rendered)
	sys.checkSucceeded(plain)
	if got, want := sys.linkURLs(rendered), []string{portal.URL + "/story/1", portal.URL + "/story/2"}; !slices.Equal(got, want) {
		t.Fatalf("rendered baseline links %q, want %q", got, want)
	}
	if got := sys.linkURLs(plain); len(got) != 0 {
		t.Fatalf("the plain check of a scripted page found links %q; want none", got)
	}

	portal.stories.Store(3)
	sys.waitForCheck(rendered)
	sys.waitForCheck(plain)
	want := []update{{rendered, portal.URL + "/story/3", "Story 3"}}
	testsvc.Eventually(t, 60*time.Second, "the scripted story recorded", func() (bool, error) { return len(sys.updates()) >= 1, nil })
	if got := sys.updates(); !slices.Equal(got, want) {
		t.Fatalf("updates %+v, want %+v (none of the plain page)", got, want)
	}

	// Chromium killed under a page: the renderer renders it again in a new
	// browser.
	portal.stories.Store(4)
	portal.setStall(true)
	sys.checkNow(rendered)
	waitStalled(t, portal)
	killed := killChromiumOf(t, rend.Pid())
	t.Logf("killed %d Chromium processes of the renderer", killed)
	portal.setStall(false)
	want = append(want, update{rendered, portal.URL + "/story/4", "Story 4"})
	testsvc.Eventually(t, 90*time.Second, "story 4 after Chromium was killed", func() (bool, error) { return len(sys.updates()) >= 2, nil })

	// The renderer killed -9 under a page: its job returns to the queue
	// and a new renderer checks the page.
	portal.stories.Store(5)
	portal.setStall(true)
	sys.checkNow(rendered)
	waitStalled(t, portal)
	rend.Kill()
	<-rend.Done()
	portal.setStall(false)
	rend = sys.start("renderer")
	want = append(want, update{rendered, portal.URL + "/story/5", "Story 5"})
	testsvc.Eventually(t, 90*time.Second, "story 5 after the renderer was killed", func() (bool, error) { return len(sys.updates()) >= 3, nil })

	// The renderer stopped gracefully under a page, its drain cut short,
	// as often as a job may reach a renderer (PORTALWATCH_RENDER_MAX_
	// DELIVERIES, 3): the stops are not deliveries, so the next renderer
	// still renders the page instead of failing its check.
	portal.stories.Store(6)
	portal.setStall(true)
	sys.checkNow(rendered)
	for range 3 {
		waitStalled(t, portal)
		if code, killed := rend.Stop(30 * time.Second); code != 0 || killed {
			t.Fatalf("the renderer stopped with %d (killed %t)\n%s", code, killed, rend.Output())
		}
		rend = sys.start("renderer")
	}
	waitStalled(t, portal)
	portal.setStall(false)
	want = append(want, update{rendered, portal.URL + "/story/6", "Story 6"})
	testsvc.Eventually(t, 60*time.Second, "story 6 after three graceful stops", func() (bool, error) { return len(sys.updates()) >= 4, nil })
	sys.checkSucceeded(rendered)

	sys.waitForCheck(rendered)
	if got := sys.updates(); !slices.Equal(got, want) {
		t.Fatalf("updates %+v, want %+v: each story once, none of the plain page", got, want)
	}
	sys.checkSucceeded(rendered)
	out, err := sys.watchctl("list", "--json")
	if err != nil || !strings.Contains(out, `"render":true`) || !strings.Contains(out, `"wait_for":"main[data-ready]"`) {
		t.Fatalf("watchctl list --json does not show the page rendered: %v\n%s", err, out)
	}
	// The plain check of the scripted page read no link but scripts: the
	// list suggests rendering it, and only it.
	for line := range strings.Lines(out) {
		var p struct {
			ID      int64 `json:"id"`
			Suggest bool  `json:"suggest_render"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("watchctl list --json printed %q: %v", line, err)
		}
		if p.Suggest != (p.ID == plain) {
			t.Errorf("page %d: suggest_render %t; want it for the plain scripted page (%d) only", p.ID, p.Suggest, plain)
		}
	}
	// A stop is graceful: the renderer drains, kills its browser and exits 0.
	if code, killed := rend.Stop(30 * time.Second); code != 0 || killed {
		t.Errorf("the renderer stopped with %d (killed %t)\n%s", code, killed, rend.Output())
	}
	table, err := sys.watchctl("list")
	if err != nil || !strings.Contains(table, fmt.Sprintf("try `watchctl set %d --render`", plain)) {
		t.Errorf("watchctl list does not suggest rendering page %d: %v\n%s", plain, err, table)
	}
}

func waitStalled(t *testing.T, p *scriptedPortal) {
	t.Helper()
	select {
	case <-p.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the rendered page never asked for its links")
	}
}

// killChromiumOf kills with SIGKILL every process descended from pid, the
// renderer's browser, and returns how many.
func killChromiumOf(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	n := 0
	for p := range parent {
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				syscall.Kill(p, syscall.SIGKILL)
				n++
				break
			}
		}
	}
	if n == 0 {
		t.Fatal("the renderer has no browser process to kill")
	}
	return n
}
