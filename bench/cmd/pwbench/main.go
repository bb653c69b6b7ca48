// Command pwbench measures portalwatch end to end; see package
// bench/pwbench for what each benchmark does. It exits 2 on bad arguments
// and 1 on any other failure.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/portalwatch/portalwatch/bench/pwbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := pwbench.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pwbench:", err)
		if errors.Is(err, pwbench.ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
