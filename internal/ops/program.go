package ops

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
)

// Config holds what every long-running program does the same way.
type Config struct {
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `env:"PORTALWATCH_LOG_LEVEL"`
	// ShutdownTimeout bounds the graceful stop after SIGTERM, at least 1s.
	// Default 20s, below supervisord's stopwaitsecs (30s).
	ShutdownTimeout time.Duration `env:"PORTALWATCH_SHUTDOWN_TIMEOUT"`
}

// Defaults of Config.
const (
	DefaultLogLevel        = "info"
	DefaultShutdownTimeout = 20 * time.Second
)

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c
}

// Validate names every field out of range.
func (c Config) Validate() error {
	return errors.Join(
		config.OneOf("LogLevel", c.LogLevel, "debug", "info", "warn", "error"),
		config.AtLeast("ShutdownTimeout", c.ShutdownTimeout, time.Second),
	)
}

// Logger returns a JSON logger at c's level, for supervisord's log files,
// whose records name the program and its pid.
func (c Config) Logger(w io.Writer, program string, pid int) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("program", program, "pid", pid)
}

// Listen says where a program serves /healthz and /metrics. Each program
// has its own default address, so that several run on one machine.
type Listen struct {
	// Addr is host:port, or "off" to serve nothing.
	Addr string `env:"PORTALWATCH_HTTP_ADDR"`
}

// Validate checks the address.
func (l Listen) Validate() error {
	if l.Addr == "off" {
		return nil
	}
	if err := config.HostPort("Addr", l.Addr); err != nil {
		return config.Invalid("Addr", l.Addr, `want host:port, such as 127.0.0.1:9102, or "off"`)
	}
	return nil
}

// Stopped logs how a program's run ended and returns err.
func Stopped(log *slog.Logger, err error) error {
	if err != nil {
		log.Error("exiting on error", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// ExitStatus writes err, if any, to stderr under the program's name and
// returns the program's exit status: 0 without an error, 2 for a
// configuration error (one line per bad variable), 1 for any other.
func ExitStatus(stderr io.Writer, program string, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", program, err)
	var cfgErr *config.Error
	if errors.As(err, &cfgErr) {
		return 2
	}
	return 1
}

// Track adds the check name, which fails with the last error given to
// report until report(nil), then asks ready: a process waiting for a
// dependency (PostgreSQL being migrated, say) shows what it waits for.
// Report is safe for concurrent use.
func (h *Health) Track(name string, ready Check) (report func(error)) {
	var waiting atomic.Pointer[error]
	connecting := errors.New("connecting")
	waiting.Store(&connecting)
	h.Set(name, func() error {
		if err := *waiting.Load(); err != nil {
			return err
		}
		return ready()
	})
	return func(err error) { waiting.Store(&err) }
}

// TuneGC sets the collector's pace (GOGC, in percent) and soft memory
// limit (GOMEMLIMIT, in bytes) where the environment does not set them:
// a program that builds a DOM per page which dies right after trades
// memory for CPU this way, within a bound.
func TuneGC(getenv config.Getenv, log *slog.Logger, percent int, limit int64) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
		log.Debug("GOGC unset", "gc_percent", percent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
		log.Debug("GOMEMLIMIT unset", "soft_limit_bytes", limit)
	}
}
