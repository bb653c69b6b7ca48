package main

import (
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/config"
)

// settingsFrom loads the web program's settings from env, as run does.
func settingsFrom(t *testing.T, env map[string]string) settings {
	t.Helper()
	cfg := defaults()
	// The archive in a directory of the test's own, never the default.
	dataDir := t.TempDir()
	getenv := func(k string) string {
		if v, ok := env[k]; ok || k != "PORTALWATCH_DATA_DIR" {
			return v
		}
		return dataDir
	}
	if err := config.Load(getenv, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestWebSettings(t *testing.T) {
	cfg := settingsFrom(t, nil)
	if cfg.Addr != "127.0.0.1:8080" || cfg.Web.PublicRead || cfg.ReadURL != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg = settingsFrom(t, map[string]string{"PORTALWATCH_WEB_ADDR": ":9000", "PORTALWATCH_WEB_PUBLIC_READ": "true"})
	if cfg.Addr != ":9000" || !cfg.Web.PublicRead {
		t.Fatalf("set: %+v", cfg)
	}
	for _, bad := range []map[string]string{
		{"PORTALWATCH_WEB_ADDR": "8080"},
		{"PORTALWATCH_WEB_ADDR": "localhost:http-alt"},
		{"PORTALWATCH_WEB_ADDR": "127.0.0.1:70000"},
		{"PORTALWATCH_WEB_PUBLIC_READ": "maybe"},
		{"DATABASE_READ_URL": "mysql://reader:s3cr3t@replica/portalwatch"},
	} {
		cfg := defaults()
		err := config.Load(func(k string) string { return bad[k] }, &cfg)
		for k := range bad {
			if err == nil || !strings.Contains(err.Error(), k) || strings.Count(err.Error(), "\n") != 0 || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("%v: error %v, want one line naming %s without its password", bad, err, k)
			}
		}
	}
}
