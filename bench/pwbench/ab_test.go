package pwbench

import (
	"math"
	"strings"
	"testing"
)

func TestABReportRatiosAndSpread(t *testing.T) {
	run := func(pps, crawler, postgres float64, missing float64) map[string]any {
		return map[string]any{"e2e_pages_per_s": pps, "cpu_ms_per_page": map[string]any{"crawler": crawler, "postgres": postgres},
			"missing": missing, "extra": 0.0, "duplicates": 0.0}
	}
	a := []map[string]any{run(100, 4, 2, 0), run(120, 4, 2, 0)}
	b := []map[string]any{run(110, 3, 2, 1), run(120, 3, 3, 0)}
	res := abReport(a, b)
	got := map[string]abFigure{}
	for _, f := range res.Figures {
		got[f.Name] = f
	}
	pps := got["e2e_pages_per_s"]
	if math.Abs(pps.Mean-1.05) > 1e-9 || pps.Min != 1 || math.Abs(pps.Max-1.1) > 1e-9 {
		t.Errorf("pages/s ratios %+v, want mean 1.05 over 1.1 and 1.0", pps)
	}
	// A group's CPU, and the total of a map without one.
	if f := got["cpu_ms_per_page.crawler"]; f.Mean != 0.75 {
		t.Errorf("crawler CPU ratio %+v, want 0.75", f)
	}
	if f := got["cpu_ms_per_page.total"]; math.Abs(f.Ratios[0]-5.0/6) > 1e-9 || f.Ratios[1] != 1 {
		t.Errorf("total CPU ratios %v, want 5/6 and 1", f.Ratios)
	}
	if _, ok := got["latency_p99_s"]; ok {
		t.Error("a figure no run has is reported")
	}
	if res.Missing != 1 || res.Pairs != 2 {
		t.Errorf("missing %v over %d pairs, want 1 over 2", res.Missing, res.Pairs)
	}
	var out strings.Builder
	res.print(&out)
	if !strings.Contains(out.String(), "1.050") || !strings.Contains(out.String(), "1.000–1.100") {
		t.Errorf("the table does not show the ratio and its spread:\n%s", out.String())
	}
}
