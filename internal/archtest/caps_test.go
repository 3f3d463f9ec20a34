package archtest

import (
	"testing"

	"storebench/internal/target"
	"storebench/internal/workload"
	_ "storebench/internal/workload/all"
)

// knownWorkloadCaps are the capabilities that still name a workload
// rather than an engine feature. The list only shrinks.
var knownWorkloadCaps = map[target.Cap]string{}

// TestCapabilitiesNameEngineFeatures: a capability says what an engine
// offers (ordered scans, atomic batches, SQL, documents, an HTTP
// endpoint), never which workload runs on it, so no capability is named
// after a workload, apart from the known ones, and those still are.
func TestCapabilitiesNameEngineFeatures(t *testing.T) {
	names := map[string]bool{}
	for _, w := range workload.All() {
		names[w.Name()] = true
	}
	if len(names) < 5 {
		t.Fatalf("only %d workloads registered", len(names))
	}
	for _, c := range target.AllCaps {
		w, known := knownWorkloadCaps[c]
		switch {
		case names[string(c)] && !known:
			t.Errorf("capability %q (%s) is named after the workload %q: name the engine feature instead", string(c), c, string(c))
		case known && !names[w]:
			t.Errorf("capability %q no longer names a workload: delete it from knownWorkloadCaps", string(c))
		}
	}
}
