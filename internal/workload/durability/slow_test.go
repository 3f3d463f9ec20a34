//go:build slow

package durability

import (
	"testing"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/powerfs/powerfstest"
)

// Cassandra (one trial: its start is slow, minutes on 2 cores, so apart
// from make test: make test-slow): under
// sync (commitlog_sync batch) a power failure loses nothing it
// acknowledged, logged batches included.
func TestSlowPowerLossCassandra(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "cassandra", fault.PowerLoss, kv.Sync, 1)
	nothingLost(t, "Cassandra commitlog_sync batch after a power failure", res)
}
