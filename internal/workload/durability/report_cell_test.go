package durability

import (
	"strings"
	"testing"

	"storebench/internal/results"
)

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

// The loss-window check fails a server that lost writes older than
// twice its promised interval (a 1 s promise, 3 s lost), passes one
// within it, and says nothing where no promise was made.
func TestWindowExceededFlagsABrokenPromise(t *testing.T) {
	broken := map[string]float64{"trials": 20, "lost": 900, "lost_trials": 20, "lost_age_s_max": 3, "lost_age_s_median": 2.5, MetricPromised: 1}
	if !WindowExceeded(broken) {
		t.Fatalf("a 1 s promise that lost 3 s is not flagged")
	}
	s := &results.Step{Metrics: broken, Facts: map[string]string{"durability": "async"}}
	if v := Verdict(s); !strings.Contains(v, "FAILED: promised at most 1.00 s") {
		t.Errorf("verdict %q: want the broken promise flagged", v)
	}
	kept := map[string]float64{"trials": 20, "lost": 900, "lost_trials": 20, "lost_age_s_max": 1.2, "lost_age_s_median": 0.9, MetricPromised: 1}
	if WindowExceeded(kept) {
		t.Errorf("a 1 s promise that lost 1.2 s is flagged")
	}
	if v := Verdict(&results.Step{Metrics: kept, Facts: map[string]string{"durability": "async"}}); !strings.Contains(v, "within its promise") {
		t.Errorf("verdict %q", v)
	}
	none := map[string]float64{"trials": 20, "lost": 900, "lost_age_s_max": 30}
	if WindowExceeded(none) {
		t.Errorf("no promise made, yet flagged")
	}
	if got := lossWindowCell(kept); got != "0.9000 s / 1.20 s (≤ 1.00 s)" {
		t.Errorf("loss window cell %q", got)
	}
}

// A run of kill -9 alone (no power failure, so no crash model) made
// since the loss window is measured is rendered with its loss window,
// not in the LazyFS-era table that names LazyFS; a run made before it
// (no lost_age_s_median) keeps the old table.
func TestKill9OnlyRunShowsItsLossWindow(t *testing.T) {
	step := func(m map[string]float64) *results.Step {
		return &results.Step{Workload: "durability", Phase: "kill-9", Metrics: m, Facts: map[string]string{"durability": "sync"}}
	}
	render1 := func(s *results.Step) string {
		run := &results.Run{Targets: []*results.Target{{Name: "kafka", Title: "Kafka", Steps: []*results.Step{s}}}}
		var b strings.Builder
		render(&b, run)
		return b.String()
	}
	got := render1(step(map[string]float64{"trials": 20, "acked": 20303, "lost": 0, "lost_age_s_median": 0, "lost_age_s_max": 0}))
	if !strings.Contains(got, "Loss window") || strings.Contains(got, "LazyFS") || strings.Contains(got, "crash model") {
		t.Errorf("kill-9 run with loss windows:\n%s", got)
	}
	old := render1(step(map[string]float64{"trials": 20, "acked": 20303, "lost": 0}))
	if !strings.Contains(old, "LazyFS") || strings.Contains(old, "Loss window") {
		t.Errorf("a run before the loss window:\n%s", old)
	}
}
