package cli

// The commands' tests need what the binary registers, as cmd/storebench
// imports it: the workloads, the targets and the servers.
import (
	_ "storebench/internal/server/all"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	_ "storebench/internal/workload/all"
)
