package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"storebench/internal/study"
	"storebench/internal/workload"
)

// Estimate is the ledger's cost on one target, from its own figures of
// what a transaction costs (ledger.estimate: the seed's, under --scale
// seed): the transactions its ladder inserts, each at estimate.txn_time
// (the phase budget and the other phases are left out: sizes a seed ran,
// 1e8 transactions, take days at its rate), and the disk of its largest
// database, that ladder step with the sample chains and the balance view
// the steps after it add (Step.Adds), each at estimate.txn_disk or twice
// a transaction's bytes.
func (Ledger) Estimate(s workload.Planning, _ study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return workload.Estimate{}, err
	}
	steps, err := Ledger{}.Plan(s, raw)
	if err != nil {
		return workload.Estimate{}, err
	}
	var inserted int64
	for _, st := range steps {
		if st.Fresh {
			inserted += st.N
		}
	}
	records := workload.Records(steps)
	per := float64(p.Estimate.TxnDisk)
	if per == 0 {
		per = 2 * float64(headerLen+int64(p.Payload))
	}
	e := workload.Estimate{
		Time:      time.Duration(float64(inserted) * float64(p.Estimate.TxnTime)),
		DiskBytes: float64(records) * per,
	}
	e.How = fmt.Sprintf("%s txns inserted", study.FormatCount(inserted))
	if p.Estimate.TxnTime > 0 {
		e.How += fmt.Sprintf(" at %s each", time.Duration(p.Estimate.TxnTime))
	} else {
		e.How += " (no ledger.estimate.txn_time: time not estimated)"
	}
	e.How += fmt.Sprintf("; the largest database %s txns (its ladder step, sample chains and balance view) at %s each", study.FormatCount(records), byteSize(per))
	if p.Estimate.Source != "" {
		e.How += "; " + p.Estimate.Source
	}
	return e, nil
}

// byteSize prints a transaction's disk (at most a few KiB) exactly.
func byteSize(b float64) string {
	if b >= 1024 && b == float64(int64(b)/1024*1024) {
		return fmt.Sprintf("%.0f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f bytes", b)
}
