package coordinator

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/study"
	_ "storebench/internal/workload/tripcache"
)

// The seed scale of tripcache is estimated from its own figures (300M
// trips under way, 2 rounds a trial, the search's 12 trials from 10K
// ticks/s, two targets) and does not fit: longer than a day with no time
// limit. The default study is estimated too, and fits its limits.
func TestEstimateOfTripcacheSeedScale(t *testing.T) {
	s, err := study.Load("tripcache")
	if err != nil {
		t.Fatal(err)
	}
	def, ok, err := Estimate(s)
	if err != nil || !ok {
		t.Fatalf("default: %v %v", ok, err)
	}
	if why := def.TooBig(s, t.TempDir()); why != "" || def.Time > time.Duration(s.Limits.Time) {
		t.Fatalf("the default study does not fit: %s (%s)", why, def)
	}
	if err := s.ApplyScale("seed"); err != nil {
		t.Fatal(err)
	}
	e, ok, err := Estimate(s)
	if err != nil || !ok {
		t.Fatalf("seed: %v %v", ok, err)
	}
	// A trial: 2 rounds of 1e6 x 300 trips at 10,000 ticks/s (grace 0).
	trial := 60000 * time.Second // grace 0
	if want := 2 * 13 * trial; e.Time != want {
		t.Errorf("time %s, want %s (%s)", e.Time, want, e)
	}
	// At least the 3e8 trips of the first round, 71-byte records.
	if e.DiskBytes < 3e8*71 || e.DiskBytes > 1e12 {
		t.Errorf("disk %g (%s)", e.DiskBytes, e)
	}
	if why := e.TooBig(s, t.TempDir()); !strings.Contains(why, "longer than 24h0m0s") {
		t.Errorf("TooBig: %q", why)
	}
}

// Each limit refuses on its own: the disk limit, the free space, the
// time limit.
func TestEstimateTooBigNamesEachLimit(t *testing.T) {
	s := &study.Study{}
	s.Limits.Time = study.Duration(time.Hour)
	s.Limits.Disk = 1 << 30
	dir := t.TempDir()
	if why := (Estimated{Time: time.Minute, DiskBytes: 1 << 20}).TooBig(s, dir); why != "" {
		t.Errorf("fits, but: %s", why)
	}
	for _, c := range []struct {
		e    Estimated
		want string
	}{
		{Estimated{Time: 2 * time.Hour}, "the time limit is 1h0m0s"},
		{Estimated{DiskBytes: 2 << 30}, "the disk limit is"},
		{Estimated{DiskBytes: 1e18}, "is free on"},
	} {
		if why := c.e.TooBig(s, dir+"/not/made/yet"); !strings.Contains(why, c.want) {
			t.Errorf("%+v: %q, want %q", c.e, why, c.want)
		}
	}
}
