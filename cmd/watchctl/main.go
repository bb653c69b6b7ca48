// Command watchctl is portalwatch's operator CLI: it migrates the database,
// registers, lists, changes and removes watched pages, and prints updates.
// Run `watchctl help` for the commands. It reads the same environment as the
// services (DATABASE_URL, PORTALWATCH_ALLOW_PRIVATE, ...).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], deployedEnv(os.Getenv), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
