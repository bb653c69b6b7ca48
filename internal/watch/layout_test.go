package watch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/portalwatch/portalwatch/internal/"

// services are the packages that hold a role's logic. They speak watch's
// types and declare interfaces over the adapters; the programs in cmd/ wire
// the adapters in.
var services = []string{"crawler", "processor", "scheduler", "web", "notifier", "extractor", "discover"}

// adapters are the packages named after a technology; services must not
// depend on them, and they must not depend on each other or on a service.
var adapters = []string{"store", "queue", "seen", "fetch", "hostgate", "webhook", "email", "renderer"}

// drivers are the clients of the services portalwatch talks to.
var drivers = []string{"github.com/jackc/pgx", "github.com/pressly/goose", "github.com/rabbitmq/amqp091-go",
	"github.com/redis/go-redis", "github.com/wneessen/go-mail"}

// deps returns the packages pkg depends on, itself included, as go list
// -deps reports them (test files are not counted).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gobin, "list", "-deps", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// exists reports whether the package's directory is in this tree.
func exists(pkg string) bool {
	_, err := os.Stat(filepath.Join("..", pkg))
	return err == nil
}

// TestServicesImportNoAdapter keeps the domain between the services and the
// adapters: a service that names a store or queue type pulls pgx or amqp091
// into its dependencies, and this fails.
func TestServicesImportNoAdapter(t *testing.T) {
	for _, svc := range services {
		if !exists(svc) {
			continue
		}
		t.Run(svc, func(t *testing.T) {
			for _, dep := range deps(t, svc) {
				for _, d := range drivers {
					if strings.HasPrefix(dep, d) {
						t.Errorf("internal/%s depends on %s; declare an interface over watch types and let cmd/ wire the adapter in", svc, dep)
					}
				}
				for _, a := range adapters {
					if dep == module+a {
						t.Errorf("internal/%s depends on the adapter internal/%s; declare an interface over watch types instead", svc, a)
					}
				}
			}
		})
	}
}

// TestAdaptersImportNoAdapterNorService keeps each adapter to its own
// technology, below the services: one that imported another would couple
// two drivers, and one that imported a service would turn the layers round.
func TestAdaptersImportNoAdapterNorService(t *testing.T) {
	for _, a := range adapters {
		t.Run(a, func(t *testing.T) {
			if !exists(a) {
				t.Fatalf("internal/%s is gone; update the layers here", a)
			}
			for _, dep := range deps(t, a) {
				for _, other := range adapters {
					if other != a && dep == module+other {
						t.Errorf("adapter internal/%s depends on adapter internal/%s", a, other)
					}
				}
				for _, svc := range services {
					if dep == module+svc {
						t.Errorf("adapter internal/%s depends on the service internal/%s", a, svc)
					}
				}
			}
		})
	}
}

// TestLeavesImportNothingOfOurs keeps the leaves below everything: the
// settings reader, the pure algorithms and the helpers every layer uses
// import no package of this module but the domain and one another's.
func TestLeavesImportNothingOfOurs(t *testing.T) {
	allowed := map[string][]string{
		"config":    nil,
		"backoff":   nil,
		"pacing":    nil,
		"shortlink": nil,
		"urlnorm":   nil,
		"redisconn": {"config"},
		"domwalk":   {"watch", "urlnorm", "config"},
		"article":   nil,
	}
	for leaf, may := range allowed {
		t.Run(leaf, func(t *testing.T) {
			for _, dep := range deps(t, leaf) {
				name, ours := strings.CutPrefix(dep, module)
				if !ours || name == leaf || slices.Contains(may, name) {
					continue
				}
				t.Errorf("leaf internal/%s depends on internal/%s", leaf, name)
			}
		})
	}
}

// TestDomainIsStdlibOnly keeps watch importable by every package: the
// standard library and its JSON codec only.
func TestDomainIsStdlibOnly(t *testing.T) {
	for _, dep := range deps(t, "watch") {
		first, _, _ := strings.Cut(dep, "/")
		if !strings.Contains(first, ".") || dep == module+"watch" || strings.HasPrefix(dep, "github.com/goccy/go-json") {
			continue
		}
		t.Errorf("internal/watch depends on %s; the domain may use the standard library and github.com/goccy/go-json only", dep)
	}
}
