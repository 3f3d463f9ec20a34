package all

import (
	"strings"
	"testing"

	"storebench/internal/target"
)

// The authenticated targets of seed 001 (package ads), registered with
// target.RegisterEmbedded, and the Go module each one's Version names.
var adsTargets = map[string]string{
	"mpt":         "github.com/ethereum/go-ethereum",
	"iavl":        "github.com/cosmos/iavl",
	"iavl-nofast": "github.com/cosmos/iavl",
	"moeingads":   "github.com/smartbch/moeingads",
}

func TestADSTargetsRegistered(t *testing.T) {
	required := requiredModules(t)
	for name, module := range adsTargets {
		i, err := target.Lookup(name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if i.Title == "" || !i.Embedded() {
			t.Errorf("%s: Title %q, Kind %q", name, i.Title, i.Kind)
		}
		// Written only in committed blocks, with a root per block: the
		// capabilities keep the ledger and YCSB (single writes) off them.
		if !i.Provides.Has(target.AuthRoots) || !i.Provides.Has(target.Batch) || i.Provides.Has(target.KeyValue) {
			t.Errorf("%s: provides %v", name, i.Provides)
		}
		switch {
		case i.Unavailable != "" && i.Open != nil:
			t.Errorf("%s: both Open and Unavailable set", name)
		case i.Unavailable != "" && !strings.Contains(i.Unavailable, `"make build"`):
			t.Errorf("%s: Unavailable does not say how to fix it: %q", name, i.Unavailable)
		case i.Unavailable == "" && i.Open == nil:
			t.Errorf("%s: neither Open nor Unavailable", name)
		case i.Kind == "pure-go" && i.Unavailable != "":
			t.Errorf("%s: a pure-Go target is unavailable: %s", name, i.Unavailable)
		}
		v, ok := required[module]
		if !ok {
			t.Errorf("%s: module %s is not in go.mod", name, module)
		} else if i.Unavailable == "" && !strings.Contains(i.Version, v) {
			t.Errorf("%s: Version %q does not mention %s %s from go.mod", name, i.Version, module, v)
		}
		t.Logf("%-9s %-32s %-7s %s %s", i.Name, i.Title, i.Kind, i.Version, i.Unavailable)
	}
	if i, _ := target.Lookup("moeingads"); i.Title != "MoeingADS (successor of OnvaKV)" {
		t.Errorf("moeingads: Title %q", i.Title)
	}
}
