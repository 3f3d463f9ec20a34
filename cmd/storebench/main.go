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
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
