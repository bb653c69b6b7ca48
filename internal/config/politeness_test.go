package config

import (
	"strings"
	"testing"
	"time"
)

func TestPolitenessSettings(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cr := c.Crawler; cr.CheckTimeout != 45*time.Second || cr.MaxPoliteWait != 5*time.Second ||
		cr.HostSpacing != time.Second || cr.HostMaxInFlight != 3 {
		t.Errorf("politeness defaults = %+v", cr)
	}

	// 0 turns the spacing and the in-flight cap off.
	c, err = Load(envOf(map[string]string{
		"PORTALWATCH_CHECK_TIMEOUT":     "10s",
		"PORTALWATCH_MAX_POLITE_WAIT":   "2s",
		"PORTALWATCH_HOST_SPACING":      "0",
		"PORTALWATCH_HOST_MAX_INFLIGHT": "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cr := c.Crawler; cr.CheckTimeout != 10*time.Second || cr.MaxPoliteWait != 2*time.Second ||
		cr.HostSpacing != 0 || cr.HostMaxInFlight != 0 {
		t.Errorf("politeness settings = %+v", cr)
	}

	_, err = Load(envOf(map[string]string{
		"PORTALWATCH_CHECK_TIMEOUT":     "1ms",
		"PORTALWATCH_MAX_POLITE_WAIT":   "soon",
		"PORTALWATCH_HOST_SPACING":      "-1s",
		"PORTALWATCH_HOST_MAX_INFLIGHT": "-1",
	}))
	if err == nil {
		t.Fatal("bad politeness settings were accepted")
	}
	for _, name := range []string{"PORTALWATCH_CHECK_TIMEOUT", "PORTALWATCH_MAX_POLITE_WAIT", "PORTALWATCH_HOST_SPACING", "PORTALWATCH_HOST_MAX_INFLIGHT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%s", name, err)
		}
	}
}
