package e2e

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
)

// TestREADMEListsEverySetting holds README's table of variables against
// what the built programs say they read (`<program> --help`): every
// variable a program reads is in the table, read by exactly the programs
// the table names, with the default the programs use; and the table lists
// no variable that no program reads, but for those `make up` reads.
func TestREADMEListsEverySetting(t *testing.T) {
	type use struct {
		programs []string
		defaults map[string]bool
	}
	read := map[string]*use{}
	for _, program := range []string{"scheduler", "crawler", "processor", "extractor", "notifier", "web", "renderer"} {
		out, err := exec.Command(filepath.Join(binDir, program), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", program, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "  ") {
				continue
			}
			name, def, _ := strings.Cut(strings.TrimSpace(line), " ")
			u := read[name]
			if u == nil {
				u = &use{defaults: map[string]bool{}}
				read[name] = u
			}
			u.programs = append(u.programs, program)
			u.defaults[strings.TrimSpace(def)] = true
		}
	}
	if len(read) < 40 {
		t.Fatalf("the programs list %d variables in all; --help's form changed?", len(read))
	}

	readme, err := os.ReadFile(filepath.Join(systest.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Configuration\n")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `([A-Z_]+)` \\| (.*?) \\| (.*?) \\| ")
	codeSpan := regexp.MustCompile("`([^`]*)`")
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, defaultCell, readBy := m[1], m[2], m[3]
		listed[name] = true
		u := read[name]
		if readBy == "`make up`" {
			if u != nil {
				t.Errorf("README says only `make up` reads %s; %v do", name, u.programs)
			}
			continue
		}
		if u == nil {
			t.Errorf("README lists %s, which no program reads", name)
			continue
		}
		if got := strings.Join(u.programs, ", "); got != readBy {
			t.Errorf("README: %s is read by %s; the programs that read it are %s", name, readBy, got)
		}
		// A default the table starts with as code is the programs' own;
		// "(none…)" is the empty value; one in words (CPUs, per program) is
		// a rule, checked where it is coded.
		want, checked := "", strings.HasPrefix(defaultCell, "(none")
		if span := codeSpan.FindStringSubmatch(defaultCell); span != nil && strings.HasPrefix(defaultCell, "`") {
			want, checked = span[1], true
		}
		if checked && (!u.defaults[want] || len(u.defaults) != 1) {
			t.Errorf("README: %s defaults to %q; the programs default to %q", name, want, slices.Sorted(maps.Keys(u.defaults)))
		}
	}
	for name, u := range read {
		if !listed[name] {
			t.Errorf("%v read %s, which README's table does not list", u.programs, name)
		}
	}
}
