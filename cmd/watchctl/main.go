// Command watchctl is portalwatch's operator CLI: it migrates the database,
// registers, lists, changes and removes watched pages, and prints updates.
// `watchctl --help` lists the commands and `watchctl <command> --help` (or
// `watchctl help <command>`) describes one. It reads the same environment as
// the services (DATABASE_URL, PORTALWATCH_ALLOW_PRIVATE, ...). Exit status: 0
// done, 1 the command could not be carried out, 2 the command line or its
// input is wrong and nothing was written.
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
