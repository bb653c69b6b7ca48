//go:build chaos

package chaos

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// TestMakeUpAgainRestartsEverything runs `make up` as a user does, three
// times in a row: each must leave every program RUNNING. A second make up
// once stopped everything: it started the new supervisord while the old one
// was still stopping its programs, which then found the socket taken. It
// also holds the recorded settings: one given to the first make up stays,
// UNSET drops it; and make down returns once everything has exited.
func TestMakeUpAgainRestartsEverything(t *testing.T) {
	if _, err := exec.LookPath("supervisord"); err != nil {
		testsvc.Unavailable(t, "supervisord not installed; start it with scripts/services.sh ensure")
	}
	// A copy of the tree, so its supervisord socket and recorded settings
	// are the test's own, beside any instance this checkout runs.
	tree := copyTree(t, systest.ModuleRoot())
	jobs, tasks := testsvc.Queues(t)
	redisURL, prefix := testsvc.Redis(t)
	env := append(os.Environ(),
		"LOCAL_SERVICES=no", "CRAWLERS=1",
		"DATABASE_URL="+testsvc.Postgres(t), "AMQP_URL="+testsvc.AMQPURL(), "REDIS_URL="+redisURL,
		"PORTALWATCH_JOB_QUEUE="+jobs, "PORTALWATCH_TASK_QUEUE="+tasks, "PORTALWATCH_REDIS_PREFIX="+prefix,
		"PORTALWATCH_HTTP_ADDR=off", "PORTALWATCH_WEB_ADDR="+freeAddr(t),
		// The archive in the test's own directory, not the machine's.
		"PORTALWATCH_DATA_DIR="+t.TempDir())
	run := func(extra ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("make", append([]string{"--no-print-directory"}, extra...)...)
		cmd.Dir, cmd.Env = tree, env
		for _, e := range extra {
			if strings.Contains(e, "=") && !strings.HasPrefix(e, "-") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() { run("down") }) //nolint:errcheck // best effort after a failure

	recorded := func() string {
		b, _ := os.ReadFile(filepath.Join(tree, "deploy/supervisor/run/environment"))
		return string(b)
	}
	firstKey := ""
	for i, args := range [][]string{
		{"up", "PORTALWATCH_ALLOW_PRIVATE=true"},
		{"up"},
		{"up"},
	} {
		out, err := run(args...)
		if err != nil {
			t.Fatalf("make %s (run %d): %v\n%s", strings.Join(args, " "), i+1, err, out)
		}
		status, err := run("status")
		if err != nil || strings.Count(status, " RUNNING ") != 6 {
			t.Fatalf("after make up run %d: status %v\n%s\nmake up said:\n%s", i+1, err, status, out)
		}
		if !strings.Contains(recorded(), "PORTALWATCH_ALLOW_PRIVATE=true") {
			t.Fatalf("after make up run %d the recorded settings lost PORTALWATCH_ALLOW_PRIVATE:\n%s", i+1, recorded())
		}
		if !strings.Contains(out, "PORTALWATCH_ALLOW_PRIVATE=true") {
			t.Errorf("make up run %d does not say which settings apply:\n%s", i+1, out)
		}
		// A key for secret headers is made once, kept, and never shown.
		key := regexp.MustCompile(`(?m)^PORTALWATCH_SECRETS_KEY=(.+)$`).FindStringSubmatch(recorded())
		if key == nil || (firstKey != "" && key[1] != firstKey) || strings.Contains(out, key[1]) {
			t.Fatalf("make up run %d: recorded key %q (first %q), shown in the output: %t", i+1, key, firstKey, key != nil && strings.Contains(out, key[1]))
		}
		firstKey = key[1]
	}
	if out, err := run("up", "UNSET=PORTALWATCH_ALLOW_PRIVATE"); err != nil || strings.Contains(recorded(), "PORTALWATCH_ALLOW_PRIVATE") {
		t.Errorf("make up UNSET=PORTALWATCH_ALLOW_PRIVATE: %v\n%s\nrecorded:\n%s", err, out, recorded())
	}
	pid, _ := os.ReadFile(filepath.Join(tree, "deploy/supervisor/run/supervisord.pid"))
	if out, err := run("down"); err != nil {
		t.Fatalf("make down: %v\n%s", err, out)
	}
	if p := strings.TrimSpace(string(pid)); p != "" {
		if _, err := os.Stat("/proc/" + p); err == nil {
			t.Errorf("make down returned while supervisord (pid %s) still runs", p)
		}
	}
	if out, err := run("status"); err == nil || !strings.Contains(out, "not running") {
		t.Errorf("make status when stopped: %v, want a failure saying so\n%s", err, out)
	}
}

// copyTree copies the files git knows of in root (tracked, and untracked
// ones it does not ignore) into a new folder.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Stat(src)
		if err != nil {
			continue // deleted in the work tree
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
