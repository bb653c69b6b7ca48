package pwbench

import (
	"slices"
	"testing"
)

func TestEnvListScopesEntriesToAKind(t *testing.T) {
	var e envList
	for _, v := range []string{"GOGC=200", "processor:GOMAXPROCS=1", "crawler:GOGC=400"} {
		if err := e.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	for kind, want := range map[string][]string{
		"processor": {"GOGC=200", "GOMAXPROCS=1"},
		"crawler":   {"GOGC=200", "GOGC=400"},
		"scheduler": {"GOGC=200"},
	} {
		if got := e.of(kind); !slices.Equal(got, want) {
			t.Errorf("of(%s) = %q, want %q", kind, got, want)
		}
	}
	for _, bad := range []string{"GOGC", "=1", "render:GOGC=1"} {
		if err := e.Set(bad); err == nil {
			t.Errorf("Set(%q) took it, want an error", bad)
		}
	}
}
