package cost

import (
	"strings"
	"testing"

	"storebench/internal/study"
)

// TestStudyNamesBuiltinCatalogsOnly: a study file is data others share;
// its sizing names a built-in catalog, never a file on the machine that
// runs it; a bad figure is refused with its field.
func TestStudyNamesBuiltinCatalogsOnly(t *testing.T) {
	for _, name := range []string{"/etc/passwd", "../mine.yaml", "mine.yaml", `..\x`} {
		if _, err := StudyCatalog(&study.Sizing{Catalog: name}); err == nil || !strings.Contains(err.Error(), "built-in catalog") {
			t.Errorf("catalog %q: %v, want refused", name, err)
		}
	}
	if c, err := StudyCatalog(&study.Sizing{}); err != nil || c.Name != DefaultCatalog {
		t.Errorf("no catalog named: %v %v, want %s", c.Name, err, DefaultCatalog)
	}
	for _, z := range []study.Sizing{{Load: "fast", Data: "1e6"}, {Load: "1000", Data: "lots"}, {Load: "1000", Data: "1e6", Growth: "-5%"}, {Load: "1000", Data: "1e6", Utilisation: 2}} {
		if _, err := FromStudy(&z); err == nil || !strings.HasPrefix(err.Error(), "sizing.") {
			t.Errorf("%+v: %v, want refused naming its field", z, err)
		}
	}
	sz, err := FromStudy(&study.Sizing{Load: "3M/min", Data: "500GiB", Growth: "5%"})
	if err != nil || sz.Load != 50000 || sz.DataBytes != 500<<30 || sz.GrowthPerMonth != 0.05 || sz.Replicas != 1 || sz.Utilisation != DefaultUtilisation {
		t.Errorf("%+v %v: want 50000/s, 500 GiB, 5%%, one copy, the default utilisation", sz, err)
	}
}
