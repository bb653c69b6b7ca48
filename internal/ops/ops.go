// Package ops serves what an operator asks a running process: /healthz, which
// says whether the process is ready and, if not, what it is waiting for, and
// /metrics in the Prometheus text format.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports nil when a dependency is ready, or what is wrong with it.
type Check func() error

// Health collects named checks. It is safe for concurrent use; checks can be
// added while the server runs, as dependencies come up.
type Health struct {
	mu     sync.Mutex
	checks map[string]Check
}

// NewHealth returns an empty Health: ready until a check says otherwise.
func NewHealth() *Health { return &Health{checks: map[string]Check{}} }

// Set adds or replaces the check called name.
func (h *Health) Set(name string, c Check) {
	h.mu.Lock()
	h.checks[name] = c
	h.mu.Unlock()
}

// Waiting returns the failing checks' messages by name; empty means ready.
func (h *Health) Waiting() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	waiting := map[string]string{}
	for name, c := range h.checks {
		if err := c(); err != nil {
			waiting[name] = err.Error()
		}
	}
	return waiting
}

// ServeHTTP answers 200 {"status":"ok"} or 503 with what the process waits for.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	waiting := h.Waiting()
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"status": "ok"}
	if len(waiting) > 0 {
		names := make([]string, 0, len(waiting))
		for n := range waiting {
			names = append(names, n)
		}
		sort.Strings(names)
		body = map[string]any{"status": "waiting", "waiting_for": waiting, "dependencies": names}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(body) //nolint:errcheck // the client went away
}

// Summary serves what ServeHTTP does without the failing checks' messages:
// 200 {"status":"ok"}, or 503 with the names of the dependencies waited
// for. It is for a /healthz anyone can reach, as the web program's is: a
// dependency's error can name its user, host and port.
func (h *Health) Summary() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		waiting := h.Waiting()
		w.Header().Set("Content-Type", "application/json")
		body := map[string]any{"status": "ok"}
		if len(waiting) > 0 {
			names := make([]string, 0, len(waiting))
			for n := range waiting {
				names = append(names, n)
			}
			sort.Strings(names)
			body = map[string]any{"status": "waiting", "dependencies": names}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(body) //nolint:errcheck // the client went away
	})
}

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors, for one process's metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Serve serves /healthz and /metrics on addr until ctx ends. An empty addr or
// "off" serves nothing. A port already in use is logged, not fatal: the
// process's work matters more than its dashboard.
func Serve(ctx context.Context, addr string, health *Health, reg *prometheus.Registry, log *slog.Logger) error {
	if addr == "" || addr == "off" {
		<-ctx.Done()
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", health)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("health and metrics server disabled", "addr", addr, "err", err)
		<-ctx.Done()
		return nil
	}
	log.Info("serving /healthz and /metrics", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("health server: %w", err)
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutCtx) //nolint:errcheck // best effort on the way out
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("health server: %w", err)
		}
		return nil
	}
}
