// Package deploy_test checks the deployment files without Docker or
// supervisord: docker-compose.yml parses and lets the workers scale, and
// the supervisord roles resolve to the role files that exist.
package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

type composeFile struct {
	Services map[string]struct {
		Command       []string          `yaml:"command"`
		ContainerName string            `yaml:"container_name"`
		Ports         []string          `yaml:"ports"`
		Environment   map[string]string `yaml:"environment"`
		Healthcheck   struct {
			Test    []string `yaml:"test"`
			Disable bool     `yaml:"disable"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// docker compose up --scale crawler=N fails on a fixed container name or
// host port; every program must have a health check and take the shared
// services' URLs from the environment.
func TestComposeScalesTheWorkers(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, name := range []string{"scheduler", "crawler", "processor", "web", "renderer"} {
		svc, ok := c.Services[name]
		if !ok {
			t.Errorf("docker-compose.yml has no %s service", name)
			continue
		}
		if len(svc.Command) != 1 || svc.Command[0] != name {
			t.Errorf("%s runs %v", name, svc.Command)
		}
		if svc.Healthcheck.Disable || len(svc.Healthcheck.Test) == 0 || !strings.Contains(strings.Join(svc.Healthcheck.Test, " "), "/healthz") {
			t.Errorf("%s has no /healthz health check: %v", name, svc.Healthcheck.Test)
		}
		for _, v := range []string{"DATABASE_URL", "AMQP_URL", "REDIS_URL"} {
			if !strings.HasPrefix(svc.Environment[v], "${"+v+":-") {
				t.Errorf("%s: %s=%q does not come from the environment first", name, v, svc.Environment[v])
			}
		}
	}
	for _, name := range []string{"crawler", "processor", "renderer"} {
		if svc := c.Services[name]; svc.ContainerName != "" || len(svc.Ports) != 0 {
			t.Errorf("%s has container_name %q and ports %v: --scale needs neither", name, svc.ContainerName, svc.Ports)
		}
	}
}

func TestSupervisorRoles(t *testing.T) {
	tests := []struct{ roles, want, wantErr string }{
		{"", "conf.d/scheduler.conf conf.d/crawler.conf conf.d/processor.conf conf.d/extractor.conf conf.d/web.conf conf.d/notifier.conf", ""},
		{"notifier,web", "conf.d/web.conf conf.d/notifier.conf", ""},
		{"processor,crawler", "conf.d/crawler.conf conf.d/processor.conf", ""},
		{"extractor,crawler", "conf.d/crawler.conf conf.d/extractor.conf", ""},
		{"web,scheduler,web", "conf.d/scheduler.conf conf.d/web.conf", ""},
		{"renderer,scheduler", "conf.d/scheduler.conf conf.d/renderer.conf", ""},
		{"crawler,,web", "", "an entry is empty"},
		{"crawler,", "", "an entry is empty"},
		{"crawler,mailer", "", `unknown role "mailer"`},
	}
	for _, tt := range tests {
		cmd := exec.Command("../scripts/supervisor-roles.sh", tt.roles)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		got := strings.TrimSpace(string(out))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ROLES=%q: %v: %s", tt.roles, err, stderr.String())
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("ROLES=%q: %q, want %q", tt.roles, got, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(stderr.String(), tt.wantErr)):
			t.Errorf("ROLES=%q: %q, %v, %q; want an error containing %q", tt.roles, got, err, stderr.String(), tt.wantErr)
		case tt.wantErr != "" && strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0:
			t.Errorf("ROLES=%q: error spans several lines: %q", tt.roles, stderr.String())
		}
		for _, f := range strings.Fields(got) {
			b, err := os.ReadFile(filepath.Join("supervisor", f))
			if err != nil {
				t.Errorf("ROLES=%q names %s: %v", tt.roles, f, err)
			} else if n := strings.Count(string(b), "[program:"); n != 1 {
				t.Errorf("%s defines %d programs, want 1", f, n)
			}
		}
	}
}
