package pwbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
)

// services says where the real servers are. Every URL must point at
// loopback: pwbench sends load, and load goes nowhere else.
type services struct{ systest.Services }

func (s *services) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.PostgresAdminURL, "postgres", envOr("PWBENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL admin URL; each run creates and drops its own database there")
	fs.StringVar(&s.AMQPURL, "amqp", envOr("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ URL")
	fs.StringVar(&s.RedisURL, "redis", envOr("REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL")
}

// runFlags registers the flags every benchmark that runs the programs
// has: where the services are (see flags) and the module to build them from.
func runFlags(fs *flag.FlagSet, svc *services, repo *string) {
	svc.flags(fs)
	fs.StringVar(repo, "repo", ".", "portalwatch's module root (programs are built from ./cmd/...)")
}

// checkLoopback refuses any service URL that is not on loopback.
func (s *services) checkLoopback() error {
	for _, raw := range []string{s.PostgresAdminURL, s.AMQPURL, s.RedisURL} {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("service URL: %w", err)
		}
		if h := u.Hostname(); h != "localhost" && !strings.HasPrefix(h, "127.") && h != "::1" {
			return fmt.Errorf("service %s is not on loopback: pwbench only loads this machine", u.Redacted())
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// harness is what every benchmark run stands on, from the harness the
// end-to-end tests use (internal/testkit/systest): the programs freshly built from
// the module at repo, and a migrated sandbox named pwbench_<id>.
type harness struct {
	binDir string
	// prebuilt says binDir is the caller's, which Close leaves.
	prebuilt bool
	sb       *systest.Sandbox
	log      io.Writer
}

// newHarness builds the programs (unless bin holds them already) and
// creates and migrates the run's sandbox; Close removes both.
func newHarness(ctx context.Context, svc services, repo, bin string, log io.Writer) (*harness, error) {
	if err := svc.checkLoopback(); err != nil {
		return nil, err
	}
	h := &harness{log: log, binDir: bin, prebuilt: bin != ""}
	if !h.prebuilt {
		start := time.Now()
		var err error
		if h.binDir, err = systest.BuildAt(ctx, repo, false); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "built %s in %.1fs\n", strings.Join(systest.Programs, ", "), time.Since(start).Seconds())
	}
	var err error
	if h.sb, err = systest.NewSandbox(ctx, svc.Services, "pwbench", newID()); err != nil {
		h.Close()
		return nil, err
	}
	fmt.Fprintf(log, "sandbox %s: database %s, queues %s/%s, Redis prefix %s\n",
		h.sb.ID, h.sb.DBName, h.sb.JobQueue, h.sb.TaskQ, h.sb.Prefix)
	if err := h.sb.Migrate(ctx, h.binDir); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// program is the path of one built program.
func (h *harness) program(name string) string { return filepath.Join(h.binDir, name) }

// pool opens a connection pool on the run's database.
func (h *harness) pool(ctx context.Context) (*pgxpool.Pool, error) {
	p, err := pgxpool.New(ctx, h.sb.DBURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", h.sb.DBName, err)
	}
	return p, nil
}

// Close removes the sandbox and the programs. It reports what it could not
// remove and carries on.
func (h *harness) Close() {
	if h.sb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := h.sb.Close(ctx); err != nil {
			fmt.Fprintf(h.log, "cleanup: %v\n", err)
		}
		fmt.Fprintf(h.log, "sandbox %s removed\n", h.sb.ID)
	}
	if !h.prebuilt {
		os.RemoveAll(h.binDir)
	}
}
