package oltp

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

// prepareRate is the rows a second a prepare is counted at, its bulk
// insert and its index together: the slowest kept is MariaDB's in
// docs/runs/web-oltp-seed-uniform-2, 3 tables of 1e6 rows loaded in
// 124.1 s and indexed in 39.3 s (18,360 rows/s), rounded down. The
// other kept prepares of 3e6 rows took 22 to 68 s (PostgreSQL, SQLite,
// MariaDB in docs/runs/web-oltp-seed-*), all on the 2-vCPU machine.
const prepareRate = 18000

// rowBytes is one sysbench row's raw bytes: id and k (INTEGERs, 4 bytes
// each), c (CHAR(120)) and pad (CHAR(60)) without their padding, as Plan
// counts them and every step records as item_bytes.
const rowBytes = 8 + CLen + PadLen

// Estimate is the workload's cost on one target: its steps as the
// coordinator plans them (each ladder size's phases, and every
// concurrency level of the entry's sweep after the phases it covers),
// each prepare at prepareRate rows a second and each read_only and
// write_only run its duration (a transaction in flight when it ends is
// not waited for: sysbench's are milliseconds). Disk: the largest
// ladder size's rows (prepared here or not), rowBytes each (indexes and the engine's overhead come
// on top).
func (OLTP) Estimate(s workload.Planning, e study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	return sweep.Estimate(s, e, OLTP{}, raw, Params.estimate)
}

func (p Params) estimate(steps []workload.Step) workload.Estimate {
	var (
		e                    workload.Estimate
		prepares, runs       int
		rows, largest        int64
		prepTime, runTime    time.Duration
		levels               []string
		runPhases, runLevels = map[string]bool{}, map[string]bool{}
		phaseOrder           []string
	)
	for _, st := range steps {
		largest = max(largest, st.N*int64(p.Tables))
		switch st.Phase {
		case PhasePrepare:
			n := st.N * int64(p.Tables)
			prepares++
			rows += n
			prepTime += time.Duration(float64(n) / prepareRate * float64(time.Second))
		default:
			d := time.Duration(p.Duration)
			if st.Duration > 0 {
				d = st.Duration
			}
			runs++
			runTime += d
			if !runPhases[st.Phase] {
				runPhases[st.Phase] = true
				phaseOrder = append(phaseOrder, st.Phase)
			}
			if c := strconv.Itoa(max(st.Concurrency, 1)); !runLevels[c] {
				runLevels[c] = true
				levels = append(levels, c)
			}
		}
	}
	e.Time = prepTime + runTime
	var how []string
	if prepares > 0 {
		how = append(how, fmt.Sprintf("%d prepare(s) of %s rows in all (%d tables) at %s rows/s, load and index, %s (the slowest kept: MariaDB, docs/runs/web-oltp-seed-uniform-2)",
			prepares, study.FormatCount(rows), p.Tables, study.FormatCount(prepareRate), round(prepTime)))
	}
	if runs > 0 {
		how = append(how, fmt.Sprintf("%d run(s) (%s at %s threads) of %s each, their duration",
			runs, strings.Join(phaseOrder, ", "), strings.Join(levels, ", "), round(time.Duration(p.Duration))))
	}
	e.DiskBytes = float64(largest) * rowBytes
	how = append(how, fmt.Sprintf("disk: the largest ladder size's %s rows of %d bytes (id, k, c and pad)", study.FormatCount(largest), rowBytes))
	e.How = strings.Join(how, "; ")
	return e
}

func round(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
