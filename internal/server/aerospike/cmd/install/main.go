// Command install builds Aerospike Server CE's asd for storebench from
// the vendored source: the same steps as `storebench server install
// aerospike` (aerospike.Install), runnable before storebench is built.
// scripts/install-aerospike.sh runs it with `go run`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"storebench/internal/server/aerospike"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := aerospike.Install(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "install-aerospike:", err)
		os.Exit(1)
	}
	fmt.Printf("install-aerospike: Aerospike %s ready: %s\n", aerospike.Version, aerospike.Binary())
}
