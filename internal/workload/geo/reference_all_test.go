package geo

import (
	"reflect"
	"testing"
)

// The batched references give, for every query user, exactly what the
// one-user brute force gives: both rules, one part and several, a
// window cut by the GC and by the ingest (the last minute partly held).
func TestReferenceAllMatchesOneByOne(t *testing.T) {
	s := Sim{Seed: 5, Users: 37, GroupSize: 4}
	h := Held{Points: 2*24*60*s.Users + 11, Cutoff: TS(20 * 60)}
	from, to := TS(22*60), TS(2*24*60+1)
	users := []int64{0, 1, 5, 12, 36}
	rule := Rule{Meters: 100, MinMinutes: 15}
	// A looser geo-backtracer rule than the seed's, so that contacts
	// exist to compare (the seed's 4e-6° finds none among these users).
	bt := SeedBTRule()
	bt.Degrees, bt.MinScore = 1e-5, 1
	contacts, btContacts := 0, 0
	for _, parts := range []int{1, 3, 64} {
		q := RefQuery{Held: h, Users: users, From: from, To: to, Parts: parts, Stop: func() bool { return false }}
		all := s.CorrelationsAll(q, rule)
		btAll := s.BTCorrelationsAll(q, bt)
		for i, u := range users {
			want := s.Correlations(h, u, from, to, rule)
			if !reflect.DeepEqual(all[i], want) {
				t.Errorf("parts %d, user %d: CorrelationsAll %v, Correlations %v", parts, u, all[i], want)
			}
			btWant := s.BTCorrelations(h, u, from, to, bt)
			if !reflect.DeepEqual(btAll[i], btWant) {
				t.Errorf("parts %d, user %d: BTCorrelationsAll %v, BTCorrelations %v", parts, u, btAll[i], btWant)
			}
			contacts += len(want)
			btContacts += len(btWant)
		}
	}
	if contacts == 0 || btContacts == 0 {
		t.Fatalf("nothing to compare: %d contacts, %d under the looser geo-backtracer rule", contacts, btContacts)
	}
	// stop ends it early.
	calls := 0
	s.CorrelationsAll(RefQuery{Held: h, Users: users, From: from, To: to, Parts: 1, Stop: func() bool { calls++; return true }}, rule)
	if calls != 1 {
		t.Errorf("stop asked %d times before it ended the reference, want 1", calls)
	}
}

// BenchmarkReferenceAll is the batched reference's cost per query user
// per other user per track minute (ns/eval), as BenchmarkReference
// measures the one-by-one one: the estimate's refEval figures.
func BenchmarkReferenceAll(b *testing.B) {
	s := Sim{Seed: 1, Users: 2000, GroupSize: 4}
	h := Held{Points: 2000 * 1500, Cutoff: TS(40)}
	from, to := h.Cutoff, TS(1500)
	users := make([]int64, 120)
	for i := range users {
		users[i] = int64(i) * s.Users / int64(len(users))
	}
	evals := float64(int64(len(users)) * s.Users * int64(len(s.Timeline(h, 0, from, to))))
	q := RefQuery{Held: h, Users: users, From: from, To: to, Parts: 1, Stop: func() bool { return false }}
	b.Run("storebench", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.CorrelationsAll(q, Rule{Meters: 100, MinMinutes: 15})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/evals, "ns/eval")
	})
	b.Run("backtracer", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.BTCorrelationsAll(q, SeedBTRule())
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/evals, "ns/eval")
	})
}
