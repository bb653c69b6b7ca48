package config

import (
	"strings"
	"testing"
	"time"
)

func TestNotifierSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Notifier; n.Concurrency != 8 || n.RetryMax != 24*time.Hour || n.Lease != 2*time.Minute || n.SMTPURL != "" {
		t.Fatalf("defaults %+v", n)
	}
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PORTALWATCH_NOTIFY_RETRY_MAX": "48h"}, "at most 24h"},
		{map[string]string{"PORTALWATCH_NOTIFY_RETRY_MIN": "2h", "PORTALWATCH_NOTIFY_RETRY_MAX": "1h"}, "above"},
		{map[string]string{"PORTALWATCH_NOTIFIER_LEASE": "15s"}, "twice"},
		{map[string]string{"PORTALWATCH_SMTP_URL": "http://u:hunter2@mail"}, "smtp://"},
		{map[string]string{"PORTALWATCH_SMTP_URL": "smtp://u:hunter2@mail"}, "PORTALWATCH_SMTP_FROM is empty"},
		{map[string]string{"PORTALWATCH_SMTP_FROM": "not an address"}, "not an e-mail address"},
	}
	for _, tt := range tests {
		_, err := Load(func(k string) string { return tt.env[k] })
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: error %v, want one mentioning %q and no password", tt.env, err, tt.want)
		}
	}
	c, err = Load(func(k string) string {
		return map[string]string{"PORTALWATCH_SMTP_URL": "smtps://u:pw@mail.example", "PORTALWATCH_SMTP_FROM": "watch@example.com"}[k]
	})
	if err != nil || c.Notifier.SMTPURL != "smtps://u:pw@mail.example" {
		t.Fatalf("good SMTP settings: %v", err)
	}
}
