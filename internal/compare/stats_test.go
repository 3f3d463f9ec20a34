package compare

import (
	"math"
	"strings"
	"testing"
)

// The two-sided 95% critical values of Student's t as published (e.g.
// NIST/SEMATECH e-Handbook, table 1.3.6.7.2), three decimals. A table
// that takes the next row's value between rows fails at df 11 (2.13
// instead of 2.201) and 29.
func TestTCriticalMatchesPublishedValues(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {3, 3.182}, {5, 2.571}, {11, 2.201}, {12, 2.179},
		{29, 2.045}, {30, 2.042}, {60, 2.000}, {100, 1.984},
	} {
		if got := tCritical(c.df); math.Abs(got-c.want) > 0.0015 {
			t.Errorf("df %v: t = %.4f, published %.3f", c.df, got, c.want)
		}
	}
	// Welch's degrees of freedom are fractional: the value lies between
	// its neighbours', not at either.
	if got := tCritical(11.5); !(got < 2.201 && got > 2.179) {
		t.Errorf("df 11.5: t = %.4f, want between 2.179 (df 12) and 2.201 (df 11)", got)
	}
	if got := tCritical(1e6); math.Abs(got-1.960) > 0.001 {
		t.Errorf("df 1e6: t = %.4f, want 1.960", got)
	}
	if math.Abs(zCritical-1.95996) > 1e-4 {
		t.Errorf("z = %v, want 1.95996", zCritical)
	}
}

// The Welch–Satterthwaite degrees of freedom of a textbook case, and the
// degenerate ones.
func TestWelchDegreesOfFreedom(t *testing.T) {
	// Equal sizes and spreads: 2(n-1).
	if se, df := welch(1, 1, 3, 3); math.Abs(df-4) > 1e-9 || math.Abs(se-math.Sqrt(2.0/3)) > 1e-9 {
		t.Errorf("welch(1,1,3,3) = %v, %v; want %v, 4", se, df, math.Sqrt(2.0/3))
	}
	// One side without spread: the other's n-1.
	if _, df := welch(0, 2, 4, 6); math.Abs(df-5) > 1e-9 {
		t.Errorf("welch(0,2,4,6) df %v, want 5", df)
	}
	// sd 1 and 3 with n 5 and 10: (0.2+0.9)²/(0.04/4+0.81/9) = 12.1.
	if _, df := welch(1, 3, 5, 10); math.Abs(df-12.1) > 1e-9 {
		t.Errorf("welch(1,3,5,10) df %v, want 12.1", df)
	}
}

// Per-second intervals are judged by Welch's t-test too, not by a flat
// twice the standard error: with 3 intervals a side (4 degrees of
// freedom, t = 2.776) a difference of 2.45 standard errors is inside the
// noise.
func TestFewIntervalsUseStudentsT(t *testing.T) {
	id := func(v float64) string { return "" }
	r := row(figureOf{"s", "throughput (ops/s)", true, id}, 11, 13, []float64{10, 11, 12}, []float64{12, 13, 14})
	if !strings.HasPrefix(r.Verdict, "no significant difference") {
		t.Errorf("a difference of 2.45 standard errors at 4 degrees of freedom judged %q", r.Verdict)
	}
	r = row(figureOf{"s", "throughput (ops/s)", true, id}, 11, 14, []float64{10, 11, 12}, []float64{13, 14, 15})
	if r.Verdict != "B better" {
		t.Errorf("a difference of 3.7 standard errors judged %q", r.Verdict)
	}
}
