package export

import "testing"

func TestParseSpec(t *testing.T) {
	if sp, err := ParseSpec("csv=/tmp/x"); err != nil || sp != (Spec{"csv", "/tmp/x"}) {
		t.Errorf("csv=/tmp/x: %v %v", sp, err)
	}
	for _, bad := range []string{"csv", "csv=", "xls=/tmp/x", "=/tmp/x"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
