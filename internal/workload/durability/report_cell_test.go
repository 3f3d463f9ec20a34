package durability

import "testing"

// A step whose trials never reopened the data has no recovery time: the
// report says "—", not "0 s / 0 s".
func TestRecoveryCellWithoutARecovery(t *testing.T) {
	if got := recoveryCell(map[string]float64{"trials": 20, "unrecoverable": 20}); got != "—" {
		t.Errorf("no recovery measured: %q", got)
	}
	// As runs before the fix recorded it: zeros for the trials that
	// never reopened.
	if got := recoveryCell(map[string]float64{"trials": 20, "unrecoverable": 20, "recovery_s_median": 0, "recovery_s_max": 0}); got != "—" {
		t.Errorf("no trial reopened, zeros recorded: %q", got)
	}
	if got := recoveryCell(map[string]float64{"recovery_s_median": 0.41, "recovery_s_max": 0.77}); got == "—" || got == "0 s / 0 s" {
		t.Errorf("a measured recovery: %q", got)
	}
}
