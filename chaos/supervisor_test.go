//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// supervisor runs supervisord with the project's own config, moved to a
// temporary folder (socket, pid file, logs) and to free health ports, so it
// never meets a supervisord that `make up` started.
type supervisor struct {
	t     *testing.T
	conf  string
	dir   string
	ports map[string]int // program name → health port
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

func startSupervisor(t *testing.T, env []string) *supervisor {
	t.Helper()
	if _, err := exec.LookPath("supervisord"); err != nil {
		testsvc.Unavailable(t, "supervisord not installed")
	}
	root := repoRoot()
	dir := t.TempDir()
	// The main file and every role's file, moved to dir: the roles' files
	// keep their own folder (conf.d), as the [include] list names them.
	confs := map[string]string{}
	for _, name := range []string{"supervisord.conf", "conf.d/scheduler.conf", "conf.d/crawler.conf",
		"conf.d/processor.conf", "conf.d/extractor.conf", "conf.d/web.conf", "conf.d/notifier.conf"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy/supervisor", name))
		if err != nil {
			t.Fatal(err)
		}
		conf := string(b)
		conf = strings.ReplaceAll(conf, "%(here)s/../../..", root) // conf.d
		conf = strings.ReplaceAll(conf, "%(here)s/../logs", dir)   // conf.d
		conf = strings.ReplaceAll(conf, "%(here)s/run", dir)
		conf = strings.ReplaceAll(conf, "%(here)s/logs", dir)
		conf = strings.ReplaceAll(conf, "%(here)s/../..", root)
		confs[name] = conf
	}
	// A multiple of ten, so that the crawlers' ports (the config appends
	// the process number to a prefix) are base+10 and base+11 and meet no
	// other program's.
	base := 20000 + 20*int(time.Now().UnixNano()%500)
	s := &supervisor{t: t, dir: dir, ports: map[string]int{
		"scheduler": base, "crawler_00": base + 10, "crawler_01": base + 11, "processor": base + 3, "web": base + 4,
		"notifier": base + 5, "extractor_00": base + 6,
	}}
	for _, r := range []struct{ name, old, new string }{
		{"conf.d/scheduler.conf", `"127.0.0.1:9101"`, fmt.Sprintf(`"127.0.0.1:%d"`, base)},
		{"conf.d/crawler.conf", `"127.0.0.1:92%(process_num)02d"`, fmt.Sprintf(`"127.0.0.1:%d%%(process_num)01d"`, base/10+1)},
		{"conf.d/processor.conf", `"127.0.0.1:9103"`, fmt.Sprintf(`"127.0.0.1:%d"`, base+3)},
		{"conf.d/web.conf", `"127.0.0.1:8080"`, fmt.Sprintf(`"127.0.0.1:%d"`, base+4)},
		{"conf.d/notifier.conf", `"127.0.0.1:9104"`, fmt.Sprintf(`"127.0.0.1:%d"`, base+5)},
		// One extractor: its one port needs no process number.
		{"conf.d/extractor.conf", `"127.0.0.1:93%(process_num)02d"`, fmt.Sprintf(`"127.0.0.1:%d"`, base+6)},
	} {
		if !strings.Contains(confs[r.name], r.old) {
			t.Fatalf("%s has no %s for this test to move", r.name, r.old)
		}
		confs[r.name] = strings.Replace(confs[r.name], r.old, r.new, 1)
	}
	if err := os.Mkdir(filepath.Join(dir, "conf.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, conf := range confs {
		if regexp.MustCompile(`(?m)^[^;\n]*%\(here\)s`).MatchString(conf) {
			t.Fatalf("%s has a path this test does not move:\n%s", name, conf)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.conf = filepath.Join(dir, "supervisord.conf")
	// Every role, as make up with no ROLES chooses them.
	includes, err := exec.Command(filepath.Join(root, "scripts/supervisor-roles.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/supervisor-roles.sh: %v", err)
	}
	env = append(env, "PORTALWATCH_SUPERVISOR_INCLUDE="+strings.TrimSpace(string(includes)),
		"PORTALWATCH_SUPERVISOR_CRAWLERS=2", "PORTALWATCH_SUPERVISOR_EXTRACTORS=1")
	cmd := exec.Command("supervisord", "-c", s.conf)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("supervisord: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		s.ctl("shutdown")
		err := testsvc.Poll(context.Background(), 60*time.Second, 100*time.Millisecond, func() (bool, string, error) {
			_, err := os.Stat(filepath.Join(dir, "supervisord.pid"))
			return os.IsNotExist(err), "", nil
		})
		if err != nil {
			t.Errorf("supervisord did not shut down: %v", err)
		}
	})
	return s
}

func (s *supervisor) ctl(args ...string) string {
	out, _ := exec.Command("supervisorctl", append([]string{"-c", s.conf}, args...)...).CombinedOutput()
	return string(out)
}

var statusLine = regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+(?:pid (\d+))?`)

// status maps each process name (crawler:crawler_00, processor, …) to its
// state and pid.
func (s *supervisor) status() map[string][2]string {
	m := map[string][2]string{}
	for _, match := range statusLine.FindAllStringSubmatch(s.ctl("status"), -1) {
		m[match[1]] = [2]string{match[2], match[3]}
	}
	return m
}

func (s *supervisor) waitAll(state string, timeout time.Duration) map[string][2]string {
	s.t.Helper()
	var st map[string][2]string
	// Each poll starts supervisorctl, a Python program: 200 ms apart.
	err := testsvc.Poll(context.Background(), timeout, 200*time.Millisecond, func() (bool, string, error) {
		st = s.status()
		// One process per health port: every program the config runs.
		ok := len(st) == len(s.ports)
		for _, v := range st {
			if v[0] != state {
				ok = false
			}
		}
		return ok, "", nil
	})
	if err != nil {
		s.t.Fatalf("not every program %s: %v:\n%s", state, err, s.ctl("status"))
	}
	return st
}

func healthz(port int) (int, map[string]any) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestSupervisord runs the project's supervisord config: programs started
// while RabbitMQ is down wait (RUNNING, never FATAL) and say so on /healthz,
// then work once it is up; a crawler killed with SIGKILL comes back under a
// new pid; and restarting and stopping programs under load loses nothing.
func TestSupervisord(t *testing.T) {
	mq := testsvc.StartRabbitMQ(t)
	mq.Stop() // the broker is down when the programs start
	sys := systest.New(t, binDir, systest.Services{
		PostgresAdminURL: testsvc.PostgresAdminURL(), AMQPURL: mq.URL(), RedisURL: testsvc.RedisURL(),
	})
	farm := systest.NewFarm(t, 20)
	ids, err := farm.Register(sys)
	if err != nil {
		t.Fatal(err)
	}
	sup := startSupervisor(t, append(sys.Env, "PORTALWATCH_BIN_DIR="+binDir, "PORTALWATCH_LOG_LEVEL=info"))

	// Well past startsecs × startretries: a program that exited because the
	// broker is down would be BACKOFF or FATAL by now.
	time.Sleep(12 * time.Second)
	sup.waitAll("RUNNING", time.Second)
	code, body := healthz(sup.ports["crawler_00"])
	if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body["waiting_for"]), "RabbitMQ") {
		t.Errorf("crawler /healthz with the broker down = %d %v, want 503 saying it waits for RabbitMQ", code, body)
	}

	mq.Start()
	for name, port := range sup.ports {
		testsvc.Eventually(t, 60*time.Second, name+" /healthz to answer 200 after the broker started", func() (bool, error) {
			code, _ := healthz(port)
			return code == http.StatusOK, nil
		})
	}

	before := sup.status()["crawler:crawler_00"]
	pid, _ := strconv.Atoi(before[1])
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	err = testsvc.Poll(context.Background(), 20*time.Second, 200*time.Millisecond, func() (bool, string, error) {
		now := sup.status()["crawler:crawler_00"]
		return now[0] == "RUNNING" && now[1] != before[1] && now[1] != "", fmt.Sprint(now), nil
	})
	if err != nil {
		t.Fatalf("crawler_00 after SIGKILL, want RUNNING under a new pid: %v", err)
	}
	t.Logf("crawler_00 killed with SIGKILL (pid %s) is RUNNING again as pid %s", before[1], sup.status()["crawler:crawler_00"][1])

	// Under load: restart the crawlers, then stop everything and start it
	// again, while the farm moves on. Nothing may be lost.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var driveErr error
	wg.Go(func() { driveErr = farm.Drive(ctx, sys, ids, 8, time.Second, 90*time.Second, t.Logf) })
	time.Sleep(2 * time.Second)
	t.Logf("supervisorctl restart crawler:*\n%s", sup.ctl("restart", "crawler:*"))
	time.Sleep(2 * time.Second)
	start := time.Now()
	t.Logf("supervisorctl stop all\n%s", sup.ctl("stop", "all"))
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("stop all took %s: a program waited for SIGKILL", took)
	}
	sup.waitAll("STOPPED", 5*time.Second)
	time.Sleep(time.Second)
	t.Logf("supervisorctl start all\n%s", sup.ctl("start", "all"))
	wg.Wait()
	if driveErr != nil {
		t.Fatal(driveErr)
	}
	v, err := farm.Check(ctx, sys)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict: %s", v)
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 || farm.TimedOutRounds() != 0 {
		t.Fatalf("after restarts and stop all under load: %s, %d rounds unchecked", v, farm.TimedOutRounds())
	}
	log, _ := os.ReadFile(filepath.Join(sup.dir, "supervisord.log"))
	if strings.Contains(string(log), "with SIGKILL") {
		t.Errorf("supervisord had to SIGKILL a program that did not stop in time:\n%s", log)
	}
	for _, v := range sup.status() {
		if v[0] == "FATAL" {
			t.Errorf("a program is FATAL:\n%s", sup.ctl("status"))
		}
	}
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
