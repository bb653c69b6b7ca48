package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEachProgramLinksOnlyItsDrivers reads each built program's symbol
// table: a program links the drivers of the services it talks to and no
// others, so that a crawler host needs no database client code and a
// change to one adapter rebuilds only the programs that use it. (Before
// each program had its own settings, every binary linked every driver: the
// crawler held 403 pgx and 29 goose symbols.)
func TestEachProgramLinksOnlyItsDrivers(t *testing.T) {
	drivers := map[string]string{
		"pgx":      "github.com/jackc/pgx/v5",
		"goose":    "github.com/pressly/goose/v3",
		"go-mail":  "github.com/wneessen/go-mail",
		"go-redis": "github.com/redis/go-redis/v9",
		"amqp091":  "github.com/rabbitmq/amqp091-go",
	}
	for program, forbidden := range map[string][]string{
		"crawler":   {"pgx", "goose", "go-mail"},
		"scheduler": {"go-mail"},
		"processor": {"go-mail"},
		"notifier":  {"amqp091", "go-redis"},
		"extractor": {"amqp091", "go-mail"},
		"web":       {"go-redis"},
		"watchctl":  {"go-redis"},
	} {
		out, err := exec.Command("go", "tool", "nm", filepath.Join(binDir, program)).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", program, err)
		}
		symbols := string(out)
		for _, name := range forbidden {
			if n := strings.Count(symbols, drivers[name]); n > 0 {
				t.Errorf("%s links %d symbols of %s, a driver it never uses", program, n, name)
			}
		}
		// The control: the drivers a program does use are found by the
		// same search.
		used := map[string]string{"crawler": "amqp091", "scheduler": "pgx", "processor": "go-redis", "notifier": "go-mail", "extractor": "pgx", "web": "pgx", "watchctl": "amqp091"}[program]
		if !strings.Contains(symbols, drivers[used]) {
			t.Errorf("%s has no symbol of %s, which it uses: the search finds nothing", program, used)
		}
	}
}
