package kafka

import (
	"encoding/base64"
	"testing"
)

// Cluster ids are what StorageTool format takes as the value of -t: one
// that starts with "-" is read as an option and the format fails, so
// none may (in 10,000 draws, ~156 would without the rule).
func TestClusterIDNeverLooksLikeAnOption(t *testing.T) {
	for i := 0; i < 10000; i++ {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		if id[0] == '-' {
			t.Fatalf("cluster id %q starts with -", id)
		}
		if b, err := base64.RawURLEncoding.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("cluster id %q: %d bytes, %v", id, len(b), err)
		}
	}
}
