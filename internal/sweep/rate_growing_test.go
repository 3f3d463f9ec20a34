package sweep

import "testing"

// A backlog is growth that matters against what was offered: a hundred
// late operations at 4,000/s are not one, thousands are; and below the
// floor of 10 a tick nothing is.
func TestGrowingIsRelativeToTheOfferedRate(t *testing.T) {
	cases := []struct {
		late    []int64
		offered float64
		want    bool
	}{
		{[]int64{0, 0, 0, 5, 10, 20, 20, 20, 30}, 4000, false}, // 70 late in the last 3 s of 12,000 offered
		{[]int64{0, 0, 0, 50, 200, 400, 600, 800, 1000}, 4000, true},
		{[]int64{0, 0, 0, 5, 10, 20, 20, 20, 30}, 100, true},                // the same trickle at 100/s is 23%
		{[]int64{1, 1, 1, 1, 1, 1, 2, 3, 4}, 100, false},                    // under 10 a tick
		{[]int64{900, 900, 900, 900, 900, 900, 900, 900, 900}, 4000, false}, // late throughout, not growing
		{[]int64{0, 500}, 4000, false},                                      // too short to tell
	}
	for i, c := range cases {
		if got := Growing(c.late, c.offered); got != c.want {
			t.Errorf("case %d: Growing(%v, %v) = %v, want %v", i, c.late, c.offered, got, c.want)
		}
	}
}
