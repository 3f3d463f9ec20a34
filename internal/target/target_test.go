package target

import (
	"testing"
)

func TestLookupByNameSchemeAndServer(t *testing.T) {
	Register(Info{Name: "fake", Title: "Fake", Server: "fakeserver", Schemes: []string{"fake"}, Unavailable: "test only", Provides: Caps{KeyValue}})
	for _, ref := range []string{"fake", "fake://h:1/x", "fakeserver"} {
		if i, err := Lookup(ref); err != nil || i.Name != "fake" || i.Embedded() {
			t.Fatalf("Lookup(%q) = %+v, %v", ref, i, err)
		}
	}
	if _, err := Lookup("nope://x"); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}
