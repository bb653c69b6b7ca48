package config

import (
	"strings"
	"testing"
)

func TestRemovalAndBurstSettings(t *testing.T) {
	c, err := Load(envOf(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Processor; p.RemovalChecks != 2 || p.BurstShare != 0.5 || p.BurstMin != 20 {
		t.Fatalf("defaults = %d, %v, %d; want 2, 0.5, 20", p.RemovalChecks, p.BurstShare, p.BurstMin)
	}
	c, err = Load(envOf(map[string]string{"PORTALWATCH_REMOVAL_CHECKS": "0", "PORTALWATCH_BURST_SHARE": "0.8", "PORTALWATCH_BURST_MIN": "50"}))
	if err != nil || c.Processor.RemovalChecks != 0 || c.Processor.BurstShare != 0.8 || c.Processor.BurstMin != 50 {
		t.Fatalf("settings read as %+v, %v", c.Processor, err)
	}
	_, err = Load(envOf(map[string]string{"PORTALWATCH_REMOVAL_CHECKS": "-1", "PORTALWATCH_BURST_SHARE": "1.5", "PORTALWATCH_BURST_MIN": "0"}))
	for _, name := range []string{"PORTALWATCH_REMOVAL_CHECKS", "PORTALWATCH_BURST_SHARE", "PORTALWATCH_BURST_MIN"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("a bad %s was not named: %v", name, err)
		}
	}
}
