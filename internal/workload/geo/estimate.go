package geo

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// The figures the estimate is made of, each from a kept run or a
// benchmark of this package on the 2-vCPU machine the docs' runs are from
// (docs/geo.md: `--scale seed` cut to 90 s, three kept runs, 10,000 users).
// They are the slowest (or, for disk, the largest) measured, so that the
// estimate is an upper bound on that machine rather than a mean.
const (
	// slowRate is the slowest whole-ingest rate kept, points a second
	// (docs/runs/geo-seed, RocksDB: geo-backtracer's layout and its
	// point-by-point GC): the time an ingest of ingest.points takes.
	slowRate = 29803
	// fastRate is the fastest kept (docs/runs/geo-seed-storebench-layout,
	// Pebble): the most points an ingest bounded by its duration alone
	// can insert, and so hold, between GC passes.
	fastRate = 146202
	// pointWriteRate is the fastest kept with ingest.write: point
	// (docs/runs/geo-seed-point-writes-3m, RocksDB: geo-backtracer's
	// layout, a Put per key, its passes deleting nothing yet): the most
	// points such an ingest bounded by its duration alone inserts.
	pointWriteRate = 69421
	// diskPerIngested is the disk per point ingested before any GC
	// deleted one (docs/runs/geo-seed-point-writes-3m, RocksDB in
	// geo-backtracer's layout: 366 MiB for 12,498,000 points, 30.7 B,
	// rounded up): what a point-by-point GC that falls behind leaves at
	// worst, every point ingested still held.
	diskPerIngested = 31
	// diskPerPoint is the most disk per point held after the GC kept
	// (docs/runs/geo-seed-storebench-layout, RocksDB: 172 B, with the
	// engine's overhead; the raw point is pointBytes).
	diskPerPoint = 172
	// timelineTime is one timeline on one goroutine: 400 took 175.65 s on 4
	// goroutines in docs/runs/geo-seed (RocksDB after the point-by-point
	// GC, where the timeline of a user who does not exist takes ~1.7 s).
	timelineTime = 1756 * time.Millisecond
	// corrMinuteTime is a correlation's time on one goroutine per minute of
	// the user's track: 0.2523 s a correlation over 131.4-point tracks in
	// docs/runs/geo-seed (RocksDB, geo-backtracer's rule), the slowest
	// kept of either rule.
	corrMinuteTime = 1920 * time.Microsecond
	// refEval and refEvalBT are the brute-force reference's cost per
	// solved user per other user per minute of the track, on one thread
	// (the correlate step computes it for all its users at once before
	// the timed part, Sim.CorrelationsAll and Sim.BTCorrelationsAll):
	// 11.8 ns (storebench's rule) and 14.6 ns (geo-backtracer's) measured
	// by BenchmarkReferenceAll on a loaded machine, rounded up. (One user
	// at a time, BenchmarkReference, it was 0.3 to 1 µs: every other
	// user's point generated again for each solved user.)
	// pointGCRate is the point-by-point GC's pace, points deleted a
	// second, the slowest kept: RocksDB's final pass in docs/runs/geo-seed
	// deleted 1.36e6 points (2684000 ingested, 1314000 held, 10000 deleted
	// by the passes during the ingest) in 52.29 s. The passes during the
	// ingest fall behind it (they deleted 10000 points in 3 passes there):
	// the final pass, after the ingest, is counted as deleting everything
	// the retention does not keep.
	pointGCRate = 26000
	refEval     = 15 * time.Nanosecond
	refEvalBT   = 20 * time.Nanosecond
)

// Estimate is the geo workload's cost on one target, for each ladder
// step: the ingest (its duration, or ingest.points at the slowest rate
// kept when that ends it sooner), the timelines and the correlations at
// the slowest kept pace, and each correlate step's brute-force reference
// (every other user at every minute of each solved user's track, one
// thread). The final GC pass and the count of points held after it are
// left out. Disk: the most points held at once (the retention, the
// simulated time between GC passes and a time block; at most the points
// ingested) at the most disk per point measured.
func (Workload) Estimate(s workload.Planning, _ study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return workload.Estimate{}, err
	}
	var e workload.Estimate
	var hows []string
	for _, n := range s.Ladder {
		one, how := p.estimate(int64(n), max(s.Concurrency, 1))
		e.Time += one.Time
		e.DiskBytes = max(e.DiskBytes, one.DiskBytes)
		hows = append(hows, how)
	}
	e.How = hows[0]
	for _, h := range hows[1:] {
		e.How += " | " + h
	}
	return e, nil
}

// estimate is one ladder step of users users on threads goroutines.
func (p Params) estimate(users int64, threads int) (workload.Estimate, string) {
	U := float64(users)
	dur := time.Duration(p.Ingest.Duration)
	// The points ingested, at most.
	rate, rateRun := float64(fastRate), "docs/runs/geo-seed-storebench-layout"
	if p.Ingest.Write == WritePoint {
		rate, rateRun = pointWriteRate, "docs/runs/geo-seed-point-writes-3m"
	}
	ingested := dur.Seconds() * rate
	ingest := dur
	how := fmt.Sprintf("%s users: ingest %s", study.FormatCount(users), round(ingest))
	if pts := float64(p.Ingest.Points); pts > 0 {
		ingested = min(ingested, pts)
		ingest = min(dur, time.Duration(pts/slowRate*float64(time.Second)))
		how = fmt.Sprintf("%s users: ingest %s (%s points at %d points/s, the slowest kept: docs/runs/geo-seed, or %s)",
			study.FormatCount(users), round(ingest), study.FormatCount(int64(pts)), slowRate, round(dur))
	}
	ret := int64(time.Duration(p.GC.Retention) / time.Second)
	// Minutes held after the final pass: the retention and the block
	// its cutoff is rounded down to.
	heldMinutes := float64((ret + BlockSeconds + MinuteSeconds - 1) / MinuteSeconds)
	var lagHow string
	lag := math.Inf(1) // simulated minutes between passes: no pass during the ingest
	switch {
	case p.GC.EverySimulated > 0:
		lag = time.Duration(p.GC.EverySimulated).Minutes()
		lagHow = fmt.Sprintf("a GC pass every %s simulated", time.Duration(p.GC.EverySimulated))
	case p.GC.Every > 0:
		lag = math.Ceil(time.Duration(p.GC.Every).Seconds() * rate / U)
		lagHow = fmt.Sprintf("a GC pass every %s, %.0f simulated minutes at %.0f points/s", time.Duration(p.GC.Every), lag, rate)
	default:
		lagHow = "no GC pass during the ingest"
	}
	held := min(ingested, U*(heldMinutes+lag))
	// The track of a solved user: the retained minutes within the
	// window, at most the minutes ingested.
	track := min(heldMinutes, math.Ceil(time.Duration(p.Correlate.Window).Minutes()), math.Ceil(ingested/U))
	corr := float64(min(int64(p.Correlate.Users), users))
	goroutines := float64(min(threads, int(corr)))

	t := ingest
	if p.GC.Delete == GCPoint {
		gone := max(ingested-U*heldMinutes, 0)
		gc := time.Duration(gone / pointGCRate * float64(time.Second))
		t += gc
		how += fmt.Sprintf("; the point-by-point GC's final pass: up to %.3g points (an ingest at %.0f points/s, the fastest kept: %s) at %d points/s, %s (the slowest kept: docs/runs/geo-seed)", gone, rate, rateRun, pointGCRate, round(gc))
	}
	timelines := time.Duration(float64(p.Timeline.Queries) * float64(timelineTime) / float64(threads))
	t += timelines
	how += fmt.Sprintf("; %s timelines at %s each on one of %d goroutines", study.FormatCount(int64(p.Timeline.Queries)), timelineTime, threads)
	rules := []string{p.Correlate.Rule}
	if p.Correlate.Rule == RuleBoth {
		rules = []string{RuleBacktracer, RuleStorebench}
	}
	evals := corr * U * track
	for _, r := range rules {
		per := refEval
		if r == RuleBacktracer {
			per = refEvalBT
		}
		t += time.Duration(corr*track*float64(corrMinuteTime)/goroutines) + time.Duration(evals*float64(per))
	}
	how += fmt.Sprintf("; %d correlate step(s) of %s users over tracks of up to %.0f minutes at %s a track minute, each after its brute-force reference (the %s users at every track minute of each: %.3g evaluations at %s on one thread (storebench's rule), %s (geo-backtracer's), BenchmarkReferenceAll rounded up)",
		len(rules), study.FormatCount(int64(corr)), track, corrMinuteTime, study.FormatCount(users), evals, refEval, refEvalBT)
	how += fmt.Sprintf("; disk: up to %.3g points held (retention %s and a %d s block, %s) at %d B each, the most per point held kept (docs/runs/geo-seed-storebench-layout, RocksDB)",
		held, time.Duration(p.GC.Retention), BlockSeconds, lagHow, diskPerPoint)
	disk := held * diskPerPoint
	if p.GC.Delete == GCPoint {
		// The passes during the ingest may fall behind it: at worst
		// nothing is deleted before the final pass.
		if worst := ingested * diskPerIngested; worst > disk {
			disk = worst
			how += fmt.Sprintf("; or, the point-by-point GC falling behind, up to %.3g points ingested at %d B each before any delete (docs/runs/geo-seed-point-writes-3m)", ingested, diskPerIngested)
		}
	}
	return workload.Estimate{Time: t, DiskBytes: disk}, how
}

func round(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
