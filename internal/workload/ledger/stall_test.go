package ledger_test

import (
	"strings"
	"testing"

	"storebench/internal/kv"
	_ "storebench/internal/server/postgres"
	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/postgres"
	_ "storebench/internal/target/redis"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest"
	"storebench/internal/workload/worktest/captest"
	"storebench/internal/workload/worktest/stalltest"
)

// A cancelled ledger step returns at once although the server stopped
// answering: every write and verified read takes the step's context, on
// Redis (go-redis, layout_resp.go) and PostgreSQL.
func TestCancelOnAStalledServer(t *testing.T) {
	const study = `
name: t
ladder: [%N%]
targets: [%T%]
workloads:
  - name: ledger
    params: {payload: 100, batch: 10, selects: 1e9, chains: {samples: 0}, stress: {duration: 0s}, balance: {addresses: 0}}
`
	for _, c := range []struct {
		target string
		o      func(t *testing.T) target.Options
	}{
		{"redis", func(t *testing.T) target.Options {
			// Database 9 of the shared server: other packages' tests use 0.
			uri := strings.TrimSuffix(servertest.URI(t, "redis"), "/0") + "/9"
			return target.Options{URI: uri, Durability: kv.Async, Extra: map[string]string{"pool": "8"}}
		}},
		{"postgres", func(t *testing.T) target.Options {
			// A database of the test's own: another package's fresh step
			// empties the ledger's tables of the server's own.
			return target.Options{URI: captest.URI(t, "postgres", "ledger_test"), Durability: kv.Async}
		}},
	} {
		t.Run(c.target, func(t *testing.T) {
			o := c.o(t)
			src := strings.ReplaceAll(study, "%T%", c.target)
			t.Run("LedgerInsert", func(t *testing.T) {
				steps := worktest.Plan(t, ledger.Ledger{}, strings.ReplaceAll(src, "%N%", "1e9"))
				stalltest.CancelWhenStalled(t, c.target, o, steps[:1])
			})
			t.Run("LedgerSelect", func(t *testing.T) {
				steps := worktest.Plan(t, ledger.Ledger{}, strings.ReplaceAll(src, "%N%", "1000"))
				stalltest.CancelWhenStalled(t, c.target, o, steps[:2])
			})
		})
	}
}
