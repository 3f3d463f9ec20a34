// Command install installs Apache Kafka's jars for storebench: the same
// steps as `storebench server install kafka` (kafka.Install), runnable
// before storebench is built. scripts/install-kafka.sh runs it with
// `go run`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"storebench/internal/server/kafka"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := kafka.Install(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "install-kafka:", err)
		os.Exit(1)
	}
	if err := (kafka.Server{}).Check(); err != nil {
		fmt.Fprintln(os.Stderr, "install-kafka:", err)
		os.Exit(1)
	}
	fmt.Printf("install-kafka: Kafka %s ready in %s\n", kafka.Version, kafka.LibDir())
}
