package main

import (
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
)

func load(env map[string]string) (settings, error) {
	cfg := defaults()
	err := config.Load(func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

func TestNotifierSettings(t *testing.T) {
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Notifier; n.Concurrency != 8 || n.RetryMax != 24*time.Hour || n.Lease != 2*time.Minute || cfg.Senders.Email.URL != "" {
		t.Fatalf("defaults %+v", cfg)
	}
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PORTALWATCH_NOTIFY_RETRY_MAX": "48h"}, `PORTALWATCH_NOTIFY_RETRY_MAX="48h": want a duration from 10ms to 24h`},
		{map[string]string{"PORTALWATCH_NOTIFY_RETRY_MIN": "2h", "PORTALWATCH_NOTIFY_RETRY_MAX": "1h"}, "want at most PORTALWATCH_NOTIFY_RETRY_MAX"},
		{map[string]string{"PORTALWATCH_NOTIFIER_LEASE": "15s"}, "twice the longer of PORTALWATCH_WEBHOOK_TIMEOUT and PORTALWATCH_SMTP_TIMEOUT"},
		{map[string]string{"PORTALWATCH_SMTP_URL": "http://u:hunter2@mail"}, "smtp://"},
		{map[string]string{"PORTALWATCH_SMTP_URL": "smtp://u:hunter2@mail"}, "PORTALWATCH_SMTP_FROM is unset"},
		{map[string]string{"PORTALWATCH_SMTP_FROM": "not an address"}, "not an e-mail address"},
	}
	for _, tt := range tests {
		_, err := load(tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: error %v, want one mentioning %q and no password", tt.env, err, tt.want)
		}
	}
	cfg, err = load(map[string]string{"PORTALWATCH_SMTP_URL": "smtps://u:pw@mail.example", "PORTALWATCH_SMTP_FROM": "watch@example.com"})
	if err != nil || cfg.Senders.Email.URL != "smtps://u:pw@mail.example" {
		t.Fatalf("good SMTP settings: %v", err)
	}
}
