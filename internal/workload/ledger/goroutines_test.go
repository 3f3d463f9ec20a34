package ledger

import (
	"strings"
	"testing"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload/worktest"
)

// stressConcurrency is the concurrency of the stress step src plans.
func stressConcurrency(t *testing.T, src string, sets ...string) int {
	t.Helper()
	for _, st := range worktest.Plan(t, Ledger{}, src, sets...) {
		if st.Phase == "stress" {
			return st.Concurrency
		}
	}
	t.Fatal("no stress step")
	return 0
}

// stress.workers, the old name of stress.goroutines ("worker" is a worker
// process only), is still read from a study file and from --set; a study
// that gives both is refused, the error naming both.
func TestStressWorkersIsTheOldNameOfGoroutines(t *testing.T) {
	with := func(stress string) string {
		return strings.Replace(smallStudy, "read_fraction: 0.5}", "read_fraction: 0.5, "+stress+"}", 1)
	}
	if got := stressConcurrency(t, with("goroutines: 3")); got != 3 {
		t.Errorf("stress.goroutines 3: concurrency %d", got)
	}
	if got := stressConcurrency(t, with("workers: 5")); got != 5 {
		t.Errorf("stress.workers 5 (the old name): concurrency %d, want 5", got)
	}
	if got := stressConcurrency(t, smallStudy, "ledger.stress.workers=6"); got != 6 {
		t.Errorf("--set ledger.stress.workers=6: concurrency %d, want 6", got)
	}
	// The old name's value is checked as the new one's.
	s, err := study.Parse("t.yaml", []byte(with("workers: 5000")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Ledger{}).DecodeParams(sweep.PlanningOf(s), s.Workloads[0]); err == nil || !strings.Contains(err.Error(), "t.yaml:12: workloads.ledger.params.stress.goroutines: 5000 is out of range") {
		t.Errorf("stress.workers 5000: got %v", err)
	}
	s, err = study.Parse("t.yaml", []byte(with("goroutines: 3, workers: 4")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Ledger{}.DecodeParams(sweep.PlanningOf(s), s.Workloads[0])
	want := "t.yaml:12: workloads.ledger.params.stress.workers: the old name of stress.goroutines, which is given too: give stress.goroutines alone"
	if err == nil || err.Error() != want {
		t.Errorf("both names: got %v, want %q", err, want)
	}
	// The study's own nodes keep the name it gave (a study is recorded
	// as written).
	s, _ = study.Parse("t.yaml", []byte(with("workers: 5")))
	if _, err := (Ledger{}).DecodeParams(sweep.PlanningOf(s), s.Workloads[0]); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, n := range s.Workloads[0].Params.Content {
		if i%2 == 0 && n.Value == "stress" {
			for j, k := range s.Workloads[0].Params.Content[i+1].Content {
				if j%2 == 0 {
					keys = append(keys, k.Value)
				}
			}
		}
	}
	if strings.Join(keys, ",") != "duration,rate,read_fraction,workers" {
		t.Errorf("the study's stress after decoding: %v, want its own keys", keys)
	}
}
