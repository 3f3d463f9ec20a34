// Command install installs Apache Cassandra's jars for storebench: the
// same steps as `storebench server install cassandra` (cassandra.Install),
// runnable before storebench is built. scripts/install-cassandra.sh runs
// it with `go run`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"storebench/internal/server/cassandra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cassandra.Install(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "install-cassandra:", err)
		os.Exit(1)
	}
	if err := (cassandra.Server{}).Check(); err != nil {
		fmt.Fprintln(os.Stderr, "install-cassandra:", err)
		os.Exit(1)
	}
	fmt.Printf("install-cassandra: Cassandra %s ready in %s\n", cassandra.Version, cassandra.LibDir())
}
