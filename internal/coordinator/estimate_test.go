package coordinator

import (
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/study"
	"storebench/internal/sweep"
	_ "storebench/internal/target/all"
	"storebench/internal/workload"
	_ "storebench/internal/workload/documents"
	_ "storebench/internal/workload/geo"
	_ "storebench/internal/workload/http"
	_ "storebench/internal/workload/oltp"
	_ "storebench/internal/workload/tripcache"
	"storebench/internal/workload/worktest"
)

// perTarget is workload name's own estimate (one target) in study s.
func perTarget(t *testing.T, s *study.Study, name string) workload.Estimate {
	t.Helper()
	w, err := workload.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range s.Workloads {
		if en.Name == name {
			return worktest.EstimateEntry(t, w, sweep.PlanningOf(s), en)
		}
	}
	t.Fatalf("%s has no %s entry", s.Name, name)
	return workload.Estimate{}
}

// seedEstimate is the built-in study name at --scale seed and its
// estimate, which its workloads must make.
func seedEstimate(t *testing.T, name string, set ...string) (*study.Study, Estimated) {
	t.Helper()
	s, err := study.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(study.Override{Scale: "seed", Set: set}); err != nil {
		t.Fatal(err)
	}
	e, ok, err := Estimate(s)
	if err != nil || !ok {
		t.Fatalf("%s seed %v: %v %v", name, set, ok, err)
	}
	return s, e
}

// A workload's estimate counts only the targets that can run its steps:
// in web-oltp cut to a web server and a SQL target, sysbench's oltp runs
// on PostgreSQL alone and is counted once, not twice; the HTTP steps run
// on nginx alone; the documents run on PostgreSQL (jsonb) too. Given by
// URI, the same. The disk is the most one target needs: PostgreSQL's
// tables and documents together, nginx writing none.
func TestEstimateCountsOnlyTargetsThatRunTheWorkload(t *testing.T) {
	load := func(targets string) *study.Study {
		s, err := study.Load("web-oltp")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(study.Override{Scale: "seed", Targets: &targets}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := load("nginx,postgres")
	oltp, web, docs := perTarget(t, s, "oltp"), perTarget(t, s, "http"), perTarget(t, s, "documents")
	if oltp.Time < 8*time.Minute || web.Time <= 0 || docs.Time < 8*time.Minute {
		t.Fatalf("per target: oltp %s, http %s, documents %s", oltp.Time, web.Time, docs.Time)
	}
	for _, targets := range []string{"nginx,postgres", "http://127.0.0.1:8080/,postgres://bench@127.0.0.1:5432/bench"} {
		s := load(targets)
		e, ok, err := Estimate(s)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", targets, ok, err)
		}
		if want := oltp.Time + web.Time + docs.Time; e.Time != want {
			t.Errorf("%s: time %s, want %s: oltp %s, http %s and documents %s, each on one target (%s)", targets, e.Time, want, oltp.Time, web.Time, docs.Time, e)
		}
		if want := oltp.DiskBytes + docs.DiskBytes; e.DiskBytes != want {
			t.Errorf("%s: disk %g, want PostgreSQL's %g (%s)", targets, e.DiskBytes, want, e)
		}
		if txt := e.String(); !strings.Contains(txt, "oltp, per target (1 of 2: ") || !strings.Contains(txt, "http, per target (1 of 2: ") {
			t.Errorf("%s: estimate says %q", targets, txt)
		}
	}
	// Only the study's oltp entry, on web servers alone: nothing runs it.
	s = load("nginx,apache")
	s.Workloads = s.Workloads[1:2]
	if e, ok, err := Estimate(s); err != nil || ok || e.Time != 0 {
		t.Errorf("oltp on web servers: %v %v %s", ok, err, e)
	}
	// Each machine shape runs every target once more.
	s = load("nginx,postgres")
	s.Machines = []string{"small", "large"}
	if e, _, err := Estimate(s); err != nil || e.Time != 2*(oltp.Time+web.Time+docs.Time) {
		t.Errorf("two machine shapes: %s (%v)", e.Time, err)
	}
}

// web-oltp at --scale seed is estimated: HTTP on its 3 web servers,
// sysbench on its 3 SQL targets, the documents on the 4 that keep them
// (PostgreSQL and SQLite by their JSON, both FerretDBs), over an hour in
// all (seed 003 --run asks first).
func TestEstimateOfWebOLTPSeedScale(t *testing.T) {
	s, e := seedEstimate(t, "web-oltp")
	web, oltp, docs := perTarget(t, s, "http"), perTarget(t, s, "oltp"), perTarget(t, s, "documents")
	if want := 3*web.Time + 3*oltp.Time + 4*docs.Time; e.Time != want || e.Time < time.Hour {
		t.Errorf("time %s, want %s, over an hour (%s)", e.Time, want, e)
	}
	for _, w := range []string{"http, per target (3 of 8: apache, nginx, node)", "oltp, per target (3 of 8: mariadb, postgres, sqlite)",
		"documents, per target (4 of 8: postgres, sqlite, ferretdb, ferretdb-pg)"} {
		if !strings.Contains(e.String(), w) {
			t.Errorf("estimate lacks %q: %s", w, e)
		}
	}
}

// The seed scale of tripcache is estimated from its own figures (300M
// trips under way, trials of 60 s, the search's 12 trials from 10K
// ticks/s, RocksDB: the seed's Aerospike runs only by URI) and fits the
// machine; streamed in whole rounds
// (tripcache.rounds=2: every trip created, then found and updated) it
// does not: longer than a day with no time limit. The default study is
// estimated too, and fits its limits.
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
	s, e := seedEstimate(t, "tripcache")
	// RocksDB alone (the seed's other engine, Aerospike, runs only by
	// URI) x (the phase and 12 trials) x 60 s, grace 0.
	if len(s.Targets) != 1 || s.Targets[0].Name != "rocksdb" {
		t.Fatalf("seed scale's targets %+v, want rocksdb", s.Targets)
	}
	if want := 13 * time.Minute; e.Time != want {
		t.Errorf("time %s, want %s (%s)", e.Time, want, e)
	}
	if why := e.TooBig(s, t.TempDir()); why != "" {
		t.Errorf("the seed scale does not fit: %s (%s)", why, e)
	}
	// With the seed's Aerospike given by URI: twice as long.
	both := "rocksdb,aerospike://10.0.0.7:3000/test"
	if err := s.Apply(study.Override{Targets: &both}); err != nil {
		t.Fatal(err)
	}
	if e, _, err := Estimate(s); err != nil || e.Time != 2*13*time.Minute {
		t.Errorf("with Aerospike by URI: time %s, want %s (%v)", e.Time, 2*13*time.Minute, err)
	}
	// In rounds: 2 rounds of 1e6 x 300 trips at 10,000 ticks/s a trial.
	s, e = seedEstimate(t, "tripcache", "tripcache.rounds=2")
	trial := 60000 * time.Second // grace 0
	if want := 13 * trial; e.Time != want {
		t.Errorf("rounds: time %s, want %s (%s)", e.Time, want, e)
	}
	// At least the 3e8 trips of the first round, 71-byte records.
	if e.DiskBytes < 3e8*71 || e.DiskBytes > 1e12 {
		t.Errorf("rounds: disk %g (%s)", e.DiskBytes, e)
	}
	if why := e.TooBig(s, t.TempDir()); !strings.Contains(why, "longer than 24h0m0s") {
		t.Errorf("rounds: TooBig: %q", why)
	}
}

// The geo study's seed scale is estimated (geo's workload.Estimator):
// six targets of 3 h of ingest each, their timelines, correlations and
// brute-force references, under a day; with the ingest set to a day it
// is refused as longer than a day, and a cut ingest fits.
func TestEstimateOfGeoSeedScale(t *testing.T) {
	s, e := seedEstimate(t, "geo")
	if n := time.Duration(len(s.Targets)); e.Time < n*time.Hour || e.Time > Unattended {
		t.Errorf("seed: %s for %d targets", e.Time, n)
	}
	// The seed scale's GC is point by point, which may fall behind: every
	// point of an hour's ingest at the fastest single-Put rate kept
	// (69,421 points/s), 31 B each before any delete, when that is more
	// than 10,000 users held for 24 h, a 1000 s block and the hour
	// between passes at 172 B each.
	if want := max(3600*69421.0*31, 10000*(1457.0+60)*172); e.DiskBytes != want {
		t.Errorf("seed: disk %g, want %g (%s)", e.DiskBytes, want, e)
	}
	for _, c := range []struct {
		set     string
		tooLong bool
	}{{"geo.ingest.duration=24h", true}, {"geo.ingest.duration=90s", false}} {
		s, e := seedEstimate(t, "geo", c.set)
		why := e.TooBig(s, t.TempDir())
		if got := strings.Contains(why, "longer than 24h0m0s"); got != c.tooLong {
			t.Errorf("%s: refused %v (%q), want %v (%s)", c.set, got, why, c.tooLong, e)
		}
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

// durability default runs each target in the class of its engine's own
// default, and refuses, before anything starts, a target that states none.
func TestDurabilityDefaultIsEachEnginesOwn(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s.Durability = "default"
	s.Targets = []study.Target{{Name: "redis"}, {Name: "pebble"}}
	_, err = Prepare(s)
	if err == nil || !strings.Contains(err.Error(), "default: pebble does not state what its engine's own default is") {
		t.Fatalf("Prepare: %v", err)
	}
	s.Targets = []study.Target{{Name: "redis"}}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := durabilityOf(s, p.Targets[0]); d != kv.Async || p.Targets[0].DefaultNote == "" {
		t.Fatalf("redis under default: %q (%q)", d, p.Targets[0].DefaultNote)
	}
	// Under sync or async every target runs the study's class.
	s.Durability = "sync"
	if d := durabilityOf(s, p.Targets[0]); d != kv.Sync {
		t.Fatalf("redis under sync: %q", d)
	}
}

// The ledger's seed ladder (1e8 transactions) does not fit: the ledger's
// estimate (workload.Estimator) says so from the seed's cost of a
// transaction (ledger.estimate.*); --ladder cut to 1e5 fits.
func TestEstimateOfTheSeedsLadder(t *testing.T) {
	s, err := study.Load("ledger")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(study.Override{Scale: "seed"}); err != nil {
		t.Fatal(err)
	}
	s.Targets = []study.Target{{Name: "redis"}} // one registered here, as the seed's are in the binary
	e, ok, err := Estimate(s)
	if err != nil || !ok {
		t.Fatalf("seed: %v %v", ok, err)
	}
	// 10+100+...+1e8 transactions at the seed's 1.3 ms: about 1.7 days.
	// The largest database: 1e8, the sample chains (5 of each length to
	// 1e6) and the view of 1e7 addresses, 2 KiB each.
	if want := time.Duration(111_111_110 * 1.3e6); e.Time != want {
		t.Errorf("time %s, want %s (%s)", e.Time, want, e)
	}
	if want := float64(100_000_000+5*1_111_110+10_000_000) * 2048; e.DiskBytes != want {
		t.Errorf("disk %g, want %g (%s)", e.DiskBytes, want, e)
	}
	if why := e.TooBig(s, t.TempDir()); !strings.Contains(why, "longer than 24h0m0s") {
		t.Errorf("the seed's ladder fits? %q", why)
	}
	if txt := e.String(); !strings.Contains(txt, "1.3ms") || !strings.Contains(txt, "seed 000") {
		t.Errorf("estimate says %q", txt)
	}
	ladder := "10,1e3,1e5"
	if err := s.Apply(study.Override{Ladder: &ladder}); err != nil {
		t.Fatal(err)
	}
	if e, _, err = Estimate(s); err != nil {
		t.Fatal(err)
	}
	if why := e.TooBig(s, t.TempDir()); why != "" || e.Time != time.Duration(101_010*1.3e6) {
		t.Fatalf("cut ladder: %q (%s)", why, e)
	}
	// The disk is the largest database's with what the chain and balance
	// steps add: 1e5, 5 sample chains of each length to 1e5 (the lengths
	// cut to the ladder), and a view of 1e5 addresses.
	if want := float64(100_000+5*111_110+100_000) * 2048; e.DiskBytes != want {
		t.Errorf("cut ladder: disk %g, want %g (%s)", e.DiskBytes, want, e)
	}
}
