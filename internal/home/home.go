// Package home is storebench's own directory for what outlives a run:
// installers' downloads (Cassandra, Kafka), leases of
// managed servers and `storebench server` instances. It is
// $STOREBENCH_HOME, else ~/.cache/storebench, the place the install
// scripts (scripts/install-*.sh) use.
package home

import (
	"os"
	"path/filepath"
	"strconv"
)

// Dir is $STOREBENCH_HOME, else ~/.cache/storebench; without a home
// directory, a folder of this user's under the temporary directory.
func Dir() string {
	if h := os.Getenv("STOREBENCH_HOME"); h != "" {
		return h
	}
	if d, err := os.UserHomeDir(); err == nil && d != "" {
		return filepath.Join(d, ".cache", "storebench")
	}
	return filepath.Join(os.TempDir(), "storebench-"+strconv.Itoa(os.Getuid()))
}

// Sub is a folder of Dir: Sub("kafka") is ~/.cache/storebench/kafka.
func Sub(name string) string { return filepath.Join(Dir(), name) }
