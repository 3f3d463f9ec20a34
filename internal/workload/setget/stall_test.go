package setget_test

import (
	"strings"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	"storebench/internal/workload/setget"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/stalltest"
)

// A cancelled setget step returns at once although Redis stopped
// answering: the pipelines of the target's RESP client take the step's
// context.
func TestCancelOnAStalledServer(t *testing.T) {
	// Database 9 of the shared server: other packages' tests use 0.
	uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
	o := target.Options{URI: uri, Durability: kv.Async, Extra: map[string]string{"pool": "8"}}
	steps := worktest.Plan(t, setget.SetGet{}, `
name: t
ladder: [1]
concurrency: 2
targets: [redis]
workloads:
  - name: setget
    params: {requests: 1e9, pipeline: 4}
`)
	stalltest.CancelWhenStalled(t, "redis", o, steps[:1])
}
