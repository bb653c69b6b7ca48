// Package migrations embeds portalwatch's numbered SQL migrations so every
// binary carries the schema it expects. They are applied by goose, each in
// its own transaction, under a PostgreSQL advisory lock.
package migrations

import "embed"

// FS holds the migration files, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
