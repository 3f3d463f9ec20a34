// Command storebench answers "which data store should my system use, and
// what will it cost me?" by running studies of real workloads on real
// engines. See README.md.
package main

import (
	"os"

	"storebench/internal/cli"
	_ "storebench/internal/server/all"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	_ "storebench/internal/workload/all"
	"storebench/internal/workload/durability"
)

func main() {
	// The durability workload's engine process (the one its crashes
	// kill) is this binary too.
	if durability.IsEngine() {
		os.Exit(durability.EngineMain())
	}
	os.Exit(cli.Main(os.Args[1:]))
}
