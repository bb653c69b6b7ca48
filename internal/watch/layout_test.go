package watch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/portalwatch/portalwatch/internal/"

// services are the packages that hold a role's logic. They speak watch's
// types and declare interfaces over the adapters; the programs in cmd/ wire
// the adapters in. internal/notify joins once it exists.
var services = []string{"crawler", "processor", "scheduler", "web", "notify"}

// adapters are the packages named after a technology; services must not
// depend on them, and they must not depend on each other.
var adapters = []string{"store", "queue", "seen", "fetch", "hostgate"}

// drivers are the clients of the services portalwatch talks to.
var drivers = []string{"github.com/jackc/pgx", "github.com/pressly/goose", "github.com/rabbitmq/amqp091-go", "github.com/redis/go-redis"}

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

// TestAdaptersImportNoAdapter keeps each adapter to its own technology: one
// that imported another would couple two drivers.
func TestAdaptersImportNoAdapter(t *testing.T) {
	for _, a := range adapters {
		t.Run(a, func(t *testing.T) {
			for _, dep := range deps(t, a) {
				for _, other := range adapters {
					if other != a && dep == module+other {
						t.Errorf("adapter internal/%s depends on adapter internal/%s", a, other)
					}
				}
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
