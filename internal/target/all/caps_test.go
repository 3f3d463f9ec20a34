package all

import (
	"testing"

	"storebench/internal/kv"
	"storebench/internal/target"
	"storebench/internal/target/servers"
)

// Every embedded target declares exactly the capabilities of the engine
// interfaces its handle implements (the server targets check theirs in
// servers.Open; the capabilities the workloads find through their
// layouts are checked by package workload/worktest/captest).
func TestEmbeddedTargetsDeclareWhatTheyProvide(t *testing.T) {
	for _, i := range target.All() {
		if !i.Embedded() || i.Open == nil {
			continue
		}
		h, err := i.Open(target.Options{Dir: t.TempDir(), Durability: kv.Async})
		if err != nil {
			t.Fatalf("%s: %v", i.Name, err)
		}
		servers.CheckCaps(t, i, h)
		h.Close()
	}
}
