package ledger_test

import (
	"context"
	"testing"

	"storebench/internal/kv"
	"storebench/internal/server/servertest"
	"storebench/internal/target"
	_ "storebench/internal/target/aerospike"
	"storebench/internal/target/servers"
	"storebench/internal/workload"
	"storebench/internal/workload/ledger"
	"storebench/internal/workload/worktest"
)

const aerospikeStudy = `
name: t
ladder: [10, 1000]
targets: [aerospike]
workloads:
  - name: ledger
    params:
      payload: 200
      batch: 64
      selects: 300
      chains: {lengths: [10, 100], samples: 2}
      stress: {duration: 500ms, rate: 400, read_fraction: 0.5}
      balance: {addresses: 2000, reads: 500}
`

// Every phase of the ledger on a real asd, every read verified; a fresh
// step starts from the target's Reset (a truncate of the ledger's sets).
// Only on the server STOREBENCH_TEST_AEROSPIKE_URI names: no package
// ships Aerospike's server, so without it the test is skipped, saying so.
func TestEveryPhaseOnAerospike(t *testing.T) {
	uri := servertest.ByURI(t, "aerospike", "aerospike://host:port/namespace")
	h := servers.Open(t, "aerospike", target.Options{URI: uri, Durability: kv.Async})
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()
	s, _, ok := ledger.StoreOf(h)
	if !ok {
		t.Fatalf("%T offers no ledger layout", h)
	}
	if err := ledger.Prepare(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, st := range worktest.Plan(t, ledger.Ledger{}, aerospikeStudy) {
		if st.Fresh {
			if err := h.(target.Resetter).Reset(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res, err := ledger.Ledger{}.Execute(ctx, &workload.Env{Target: h}, st)
		if err != nil {
			t.Fatalf("%s N=%d: %v", st.Phase, st.N, err)
		}
		t.Logf("%s N=%d: %d ops, %d verified", st.Phase, st.N, res.Ops, res.Verify.Checked)
		switch st.Phase {
		case "select":
			if res.Verify.Checked != 300 {
				t.Fatalf("select: %+v", res.Verify)
			}
		case "chain":
			if l := int64(res.Metrics["length"]); res.Verify.Checked != 2*l {
				t.Fatalf("chain %d: checked %d", l, res.Verify.Checked)
			}
		case "stress":
			if res.Metrics["reads"] == 0 || res.Metrics["writes"] == 0 {
				t.Fatalf("stress: %+v", res.Metrics)
			}
		case "balance":
			if res.Verify.Checked != 500 {
				t.Fatalf("balance: %+v", res.Verify)
			}
		}
	}
}
