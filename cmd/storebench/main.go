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
	_ "storebench/internal/workload/adsrw"
	_ "storebench/internal/workload/ledger"
	_ "storebench/internal/workload/pointselect"
	_ "storebench/internal/workload/setget"
	_ "storebench/internal/workload/tokens"
	_ "storebench/internal/workload/ycsb"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
