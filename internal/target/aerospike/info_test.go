package aerospike

import "testing"

func TestDurabilityFromNamespaceInfo(t *testing.T) {
	for _, c := range []struct {
		info  string
		fsync bool
	}{
		{"objects=0;storage-engine=memory;strong-consistency=false", false},
		{"storage-engine=device;strong-consistency=false;storage-engine.commit-to-device=false", false},
		{"storage-engine=device;strong-consistency=true;storage-engine.commit-to-device=true;replication-factor=1", true},
	} {
		desc, fsync := describeDurability(parseInfo(c.info))
		if fsync != c.fsync || desc == "" {
			t.Errorf("%q: %q, %v; want fsync %v", c.info, desc, fsync, c.fsync)
		}
	}
}
