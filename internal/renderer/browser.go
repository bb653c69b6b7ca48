package renderer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/chromedp/chromedp"
)

// browser is one Chromium process with its pages' bookkeeping. It is
// replaced, never repaired: after PagesPerBrowser pages, past MaxRSS, when
// it dies or hangs.
type browser struct {
	ctx         context.Context // chromedp's browser context: tabs derive from it
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc
	pid         int
	dataDir     string

	// Guarded by Renderer.mu.
	started int  // pages begun on it
	active  int  // pages on it now
	retired bool // takes no more pages; killed when the last one ends

	killOnce sync.Once
	// lost says why the browser was killed under its pages ("" while it
	// was not): their renders are tried once more in a new browser.
	lostMu sync.Mutex
	lost   string
}

// errBrowserLost is the error of a render whose browser died or was killed
// under it: the page gets one more try in a new browser.
var errBrowserLost = errors.New("the browser was lost")

// startBrowser starts Chromium with every door the renderer does not guard
// closed, its traffic sent to proxyAddr, which admits nothing: each page's
// context gets its own session instead.
func startBrowser(cfg Config, proxyAddr string) (*browser, error) {
	exe, err := cfg.chromium()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", profilePrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 && cfg.User != "" {
		cred, err := credential(cfg.User)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		attr.Credential = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start chromium: give %s its profile folder: %w", cfg.User, err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(dir),
		chromedp.Env("HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir),
		chromedp.ProxyServer(proxyAddr),
		// Loopback is no exception: a page must not reach the renderer's
		// own listeners, nor the host's services.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.Flag("block-new-web-contents", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,NetworkPrediction,PrefetchPrivacyChanges,InterestFeedContentSuggestions,MediaRouter,OptimizationHints"),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-file-system", true),
		chromedp.Flag("blink-settings", "imagesEnabled=false"),
		// A script that allocates without end meets V8's limit in its own
		// renderer process long before the watchdog's.
		chromedp.Flag("js-flags", "--max-old-space-size=256"),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { cmd.SysProcAttr = attr }),
	)
	if cfg.UserAgent != "" {
		opts = append(opts, chromedp.UserAgent(cfg.UserAgent))
	}
	if cfg.NoSandbox {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start chromium %s: %w (as root without a user namespace sandbox, set PORTALWATCH_RENDER_NO_SANDBOX=true; see README)", exe, err)
	}
	b := &browser{ctx: ctx, cancel: cancel, cancelAlloc: cancelAlloc, dataDir: dir}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	return b, nil
}

// profilePrefix starts the name of a browser's profile folder, followed by
// the pid of the renderer that made it.
const profilePrefix = "portalwatch-chromium-"

// sweepProfiles removes the profile folders of renderers that are gone (a
// renderer killed with SIGKILL leaves its browser's folder behind) and
// returns how many it removed. The folder of a renderer still running is
// left alone, so renderers may share a host.
func sweepProfiles() int {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), profilePrefix+"*"))
	n := 0
	for _, d := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), profilePrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		if os.RemoveAll(d) == nil {
			n++
		}
	}
	return n
}

// credential is the uid and gid of name.
func credential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("chromium's user %q: %w (set PORTALWATCH_RENDER_USER to an unprivileged user that exists)", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("chromium's user %q: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// kill ends the browser's process group at once and frees its profile;
// why, when not empty, marks its pages' renders as lost.
func (b *browser) kill(why string) {
	if why != "" {
		b.lostMu.Lock()
		if b.lost == "" {
			b.lost = why
		}
		b.lostMu.Unlock()
	}
	b.killOnce.Do(func() {
		if b.pid > 0 {
			syscall.Kill(-b.pid, syscall.SIGKILL) //nolint:errcheck // gone already is fine
		}
		b.cancel()
		b.cancelAlloc()
		os.RemoveAll(b.dataDir)
	})
}

// lostReason says why the browser was killed under its pages, "" if not.
func (b *browser) lostReason() string {
	b.lostMu.Lock()
	defer b.lostMu.Unlock()
	return b.lost
}

// alive reports whether the browser's main process still runs.
func (b *browser) alive() bool {
	if b.pid <= 0 || b.ctx.Err() != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.pid))
	if err != nil {
		return false
	}
	state, _, _ := procStat(stat)
	return state != 'Z' && state != 'X'
}

// procStat reads the state and parent pid from a /proc/PID/stat line,
// whose second field (the command) may hold spaces and parentheses.
func procStat(stat []byte) (state byte, ppid int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, 0, false
	}
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}

// treeRSS returns the resident memory, in bytes, of pid and every process
// descended from it, read from /proc: Chromium's renderers, GPU and
// utility processes are its children. Each counts its proportional set
// size (PSS): the pages they share, the browser's binary first, are
// counted once in all, where summing their RSS counts them in every
// process and reads a fresh browser as 900 MiB.
func treeRSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(stat); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	page := int64(os.Getpagesize())
	var total int64
	seen := map[int]bool{}
	queue := []int{pid}
	for len(queue) > 0 && len(seen) < 10_000 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		total += processMemory(p, page)
		queue = append(queue, children[p]...)
	}
	return total
}

// processMemory is the PSS of pid in bytes from smaps_rollup, or its RSS
// from statm where the kernel has no smaps_rollup.
func processMemory(pid int, page int64) int64 {
	if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		for _, line := range strings.Split(string(rollup), "\n") {
			if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb << 10
					}
				}
			}
		}
	}
	if statm, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid)); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return n * page
			}
		}
	}
	return 0
}
