// Package migrations embeds portalwatch's numbered SQL migrations so every
// binary carries the schema it expects. They are applied by goose, each in
// its own transaction, under a PostgreSQL advisory lock.
package migrations

import (
	"embed"
	"io/fs"
	"strconv"
	"strings"
)

// FS holds the migration files, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS

// Latest returns the version of the newest migration, the schema the
// programs built with this package expect.
func Latest() int64 {
	var newest int64
	files, _ := fs.Glob(FS, "*.sql")
	for _, f := range files {
		prefix, _, _ := strings.Cut(f, "_")
		if v, err := strconv.ParseInt(prefix, 10, 64); err == nil && v > newest {
			newest = v
		}
	}
	return newest
}
