package documents

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

// The figures the estimate is made of, from the kept runs on the 2-vCPU
// machine the docs' runs are from, the slowest of each (so that the
// estimate is an upper bound there rather than a mean).
const (
	// loadRate is the documents a second a prepare's load is counted at:
	// the slowest kept is FerretDB on SQLite's, 60,000 documents (3
	// collections of 2e4, the only size kept) in 3.74 s, 16,027/s
	// (docs/runs/web-oltp-documents; FerretDB on PostgreSQL 3.13 s,
	// SQLite and PostgreSQL under 0.4 s), rounded down.
	loadRate = 15000
	// insertRate is the insert a second a mode bound by its operations
	// alone is counted at: the slowest kept, FerretDB on PostgreSQL at 8
	// threads, 409/s (docs/runs/web-oltp-documents-ferretdb-pg), rounded
	// down.
	insertRate = 400
	// findRate is the same for the modes that find their document by
	// _id (iterate_one; update_one and delete_one, never kept, counted
	// alike): FerretDB on SQLite's finds by integer _id scan their
	// collection, 0.33/s at 32 threads on 2e4 documents a collection
	// (docs/runs/web-oltp-documents), rounded down.
	findRate = 0.3
)

// Estimate is the workload's cost on one target: its steps as the
// coordinator plans them (each ladder size's prepare and modes, and every
// concurrency level of the entry's sweep after the modes it covers),
// each prepare's load at loadRate, each mode its duration, or with none
// its operations at insertRate or findRate. Disk: the most documents one
// database holds (the largest prepare, and what inserts bound by their
// operations alone add), 48 bytes and the text each, as Plan counts them
// (the engine's overhead and the index come on top).
func (Documents) Estimate(s workload.Planning, e study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	return sweep.Estimate(s, e, Documents{}, raw, Params.estimate)
}

func (p Params) estimate(steps []workload.Step) workload.Estimate {
	t := stepTally{seenMode: map[string]bool{}, seenLevel: map[string]bool{}}
	for _, st := range steps {
		t.add(p, st)
	}
	item := int64(48 + p.TextSize)
	return workload.Estimate{
		Time:      t.loadTime + t.modeTime,
		DiskBytes: float64(t.most) * float64(item),
		How:       t.describe(p, item),
	}
}

// stepTally is what estimate counts over the steps, kept together so that
// counting them and saying how the estimate was made are apart.
type stepTally struct {
	prepares, modes     int
	docs                int64
	loadTime, modeTime  time.Duration
	timed, counted      int
	names, levels       []string
	seenMode, seenLevel map[string]bool
	db, most            int64 // documents in the database, the most it holds
	finds               bool
}

// add counts one step: a prepare's load, or a mode's duration or, with
// none, its operations at the slowest kept rate, with what it adds to or
// takes from the database.
func (t *stepTally) add(p Params, st workload.Step) {
	ops := int64(p.Operations)
	if st.Phase == PhasePrepare {
		n := st.N * int64(p.Collections)
		t.prepares++
		t.docs += n
		t.loadTime += time.Duration(float64(n) / loadRate * float64(time.Second))
		if st.Fresh {
			t.db = n
		}
		t.most = max(t.most, t.db)
		return
	}
	t.modes++
	if !t.seenMode[st.Phase] {
		t.seenMode[st.Phase] = true
		t.names = append(t.names, st.Phase)
	}
	if c := strconv.Itoa(max(st.Concurrency, 1)); !t.seenLevel[c] {
		t.seenLevel[c] = true
		t.levels = append(t.levels, c)
	}
	t.finds = t.finds || st.Phase != ModeInsert
	d := time.Duration(p.Duration)
	if st.Duration > 0 {
		d = st.Duration
	}
	if d > 0 {
		// Whichever of the duration and the operations comes first:
		// at the least nothing is added or deleted.
		t.timed++
		t.modeTime += d
		return
	}
	t.counted++
	rate := findRate
	switch st.Phase {
	case ModeInsert:
		rate = insertRate
		t.db += ops
	case ModeDelete:
		t.db -= min(ops, t.db)
	}
	t.most = max(t.most, t.db)
	t.modeTime += time.Duration(float64(ops) / rate * float64(time.Second))
}

// describe says how the estimate was made from the tally, for the reader
// to check it against the runs it is from; item is a document's bytes.
func (t *stepTally) describe(p Params, item int64) string {
	ops := int64(p.Operations)
	var how []string
	if t.prepares > 0 {
		how = append(how, fmt.Sprintf("%d prepare(s) loading %s documents in all (%d collections) at %s documents/s, %s (the slowest kept, FerretDB on SQLite, at 2e4 a collection: docs/runs/web-oltp-documents)",
			t.prepares, study.FormatCount(t.docs), p.Collections, study.FormatCount(loadRate), round(t.loadTime)))
	}
	if t.modes > 0 {
		h := fmt.Sprintf("%d mode run(s) (%s at %s threads)", t.modes, strings.Join(t.names, ", "), strings.Join(t.levels, ", "))
		if t.timed > 0 {
			h += fmt.Sprintf(", %d of %s each, the duration", t.timed, round(time.Duration(p.Duration)))
			if t.finds {
				h += " (an operation in flight when it ends is waited for and not counted: FerretDB on SQLite's finds by integer _id scan their collection, and a 5 s iterate_one at 32 threads took 98 s on 2e4 documents a collection there)"
			}
		}
		if t.counted > 0 {
			h += fmt.Sprintf(", %d of %s operations each at the slowest kept rate (insert %d/s, FerretDB on PostgreSQL; finds by _id %g/s, FerretDB on SQLite's scans)",
				t.counted, study.FormatCount(ops), insertRate, findRate)
		}
		how = append(how, h)
	}
	how = append(how, fmt.Sprintf("disk: %s documents in the largest database at %d bytes each", study.FormatCount(t.most), item))
	return strings.Join(how, "; ")
}

func round(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
