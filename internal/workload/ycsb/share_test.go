package ycsb

import "testing"

// The records a process inserts and checks under faults are the runner's
// static partition: every record is owned by exactly one of the parts,
// and share counts what owns selects.
func TestOwnsIsTheRunnersPartition(t *testing.T) {
	for _, n := range []int64{1, 7, 100, 3001} {
		for parts := 1; parts <= 4; parts++ {
			for goroutines := 1; goroutines <= 3; goroutines++ {
				owners := make([]int, n)
				for part := 0; part < parts; part++ {
					r := &run{n: n, goroutines: goroutines, part: part, parts: parts}
					var mine int64
					for i := int64(0); i < n; i++ {
						if r.owns(i) {
							owners[i]++
							mine++
							// The runner's goroutine w of this part takes
							// seq part*goroutines+w, then strides by parts*goroutines.
							g := i % int64(parts*goroutines)
							if g < int64(part*goroutines) || g >= int64((part+1)*goroutines) {
								t.Fatalf("n %d, part %d/%d, %d goroutines: record %d is global goroutine %d's", n, part, parts, goroutines, i, g)
							}
						}
					}
					if mine != r.share() {
						t.Fatalf("n %d, part %d/%d, %d goroutines: owns %d records, share says %d", n, part, parts, goroutines, mine, r.share())
					}
				}
				for i, c := range owners {
					if c != 1 {
						t.Fatalf("n %d, %d parts × %d goroutines: record %d owned %d times", n, parts, goroutines, i, c)
					}
				}
			}
		}
	}
}
