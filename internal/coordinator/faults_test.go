package coordinator

import (
	"strings"
	"testing"

	"storebench/internal/study"
	_ "storebench/internal/target/cassandra"
	_ "storebench/internal/workload/geo"
)

// A fault action that names a target applies to it alone: the study can
// hold a single-node target (whose steps then carry no faults, so it is
// not refused) beside the cluster it fails. The target defaults to the
// previous action's; one the study does not have is the study's error.
func TestFaultsApplyToTheTargetTheyName(t *testing.T) {
	src := `name: t
ladder: [10]
targets: [cassandra, cassandra-cluster]
workloads:
  - name: geo
    faults:
      - {at: 5s, action: kill, node: 2, phase: ingest, target: cassandra-cluster}
      - {at: 9s, action: restart, node: 2}
`
	s, err := study.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string) (n int) {
		for _, st := range faultsOn(p.Steps, name) {
			n += len(st.Faults)
		}
		return n
	}
	if n := count("cassandra"); n != 0 {
		t.Errorf("cassandra gets %d fault actions, want none", n)
	}
	if n := count("cassandra-cluster"); n != 2 {
		t.Errorf("cassandra-cluster gets %d fault actions, want the kill and the restart", n)
	}
	// The plan's steps are not changed for the targets that follow.
	if n := count("cassandra-cluster"); n != 2 {
		t.Errorf("after filtering for cassandra, cassandra-cluster gets %d", n)
	}
	bad := strings.Replace(src, "target: cassandra-cluster", "target: cassandra-clstr", 1)
	s, err = study.Parse("t.yaml", []byte(bad))
	if err == nil {
		_, err = Prepare(s)
	}
	if err == nil || !strings.Contains(err.Error(), `"cassandra-clstr" is not a target of the study`) {
		t.Fatalf("a fault on a target the study lacks: %v", err)
	}
}
