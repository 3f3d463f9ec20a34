// Command storebench answers "which data store should my system use, and
// what will it cost me?" by running studies of real workloads on real
// engines. See README.md.
package main

import (
	"os"

	"storebench/internal/cli"
	"storebench/internal/reexec"
	_ "storebench/internal/server/all"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	_ "storebench/internal/workload/all"
)

func main() {
	// A helper process a package starts of this same binary (the
	// durability workload's engine, the process its crashes kill) runs
	// the entry point that package registered, not the CLI: the packages
	// register themselves, so this file names none of them.
	if code, ran := reexec.Main(); ran {
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args[1:]))
}
