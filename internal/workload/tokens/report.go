package tokens

import (
	"fmt"
	"strings"

	"storebench/internal/report/section"
	"storebench/internal/results"
	"storebench/internal/workload"
	"storebench/internal/workload/roots"
)

func init() {
	section.Register("tokens", section.Def{
		Render:   tokens,
		Headline: &section.Headline{Figure: "tokens.runtx", Metric: "seconds", What: "seconds to run the blocks of transfers"},
		Metrics: []section.Metric{
			{Name: "accounts", Phases: []string{"genacc", "checkacc", "invariants"}, Agg: section.Sum, What: "accounts"},
			{Name: "blocks", Phases: []string{"genacc", "runtx"}, Agg: section.Sum, What: "blocks committed"},
			{Name: "block_size", Phases: []string{"genacc", "runtx"}, Agg: section.Max, What: "accounts or transfers per block"},
			{Name: "accounts_per_s", Phases: []string{"genacc", "checkacc"}, Unit: "accounts/s", Agg: section.Rate, Better: section.Higher, What: "accounts written or checked per second"},
			{Name: "commit_seconds", Phases: []string{"genacc", "runtx"}, Unit: "s", Agg: section.Sum, Better: section.Lower, What: "time spent in commits"},
			{Name: "readers", Phases: []string{"checkacc", "invariants"}, Agg: section.Max, What: "concurrent readers"},
			{Name: "transfers", Phases: []string{"runtx", "invariants"}, Agg: section.Sum, What: "transfers run"},
			{Name: "tps", Phases: []string{"runtx"}, Unit: "transfers/s", Agg: section.Rate, Better: section.Higher, What: "transfers per second"},
			{Name: "applied", Phases: []string{"runtx"}, Agg: section.Sum, What: "transfers applied"},
			{Name: "rejected_insufficient", Phases: []string{"runtx"}, Agg: section.Sum, What: "transfers rejected: balance too low"},
			{Name: "rejected_overflow", Phases: []string{"runtx"}, Agg: section.Sum, What: "transfers rejected: receiver would overflow"},
			{Name: "rejected_no_gas", Phases: []string{"runtx"}, Agg: section.Sum, What: "transfers rejected: no gas"},
			{Name: "gas_burned", Phases: []string{"runtx", "invariants"}, Agg: section.Sum, What: "native tokens burned as gas"},
			{Name: "tokens", Phases: []string{"invariants"}, Agg: section.Max, What: "token kinds"},
			{Name: "supply_mismatches", Phases: []string{"invariants"}, Agg: section.Sum, Better: section.Lower, What: "tokens whose supply changed"},
			{Name: "sequence_mismatches", Phases: []string{"invariants"}, Agg: section.Sum, Better: section.Lower, What: "accounts whose sequence differs from the transfers they sent"},
			{Name: "negative_balances", Phases: []string{"invariants"}, Agg: section.Sum, Better: section.Lower, What: "balances beyond any possible one"},
			{Name: "native_supply_genesis", Phases: []string{"invariants"}, Agg: section.Max, What: "native supply at genesis"},
			{Name: "native_supply_end", Phases: []string{"invariants"}, Agg: section.Max, What: "native supply at the end"},
			{Name: "invariants_hold", Phases: []string{"invariants"}, Agg: section.Mean, Better: section.Higher, What: "1 when every invariant held"},
			workload.ItemBytesMetric,
		},
	})
}

// tokens renders the seed 001 transaction test tables: rows are the tasks
// (Genacc, Checkacc, Runtx), columns the targets, one set per ladder size.
func tokens(b *strings.Builder, run *results.Run) {
	var ts []*results.Target
	head := []string{"Task (s)"}
	for _, t := range run.Targets {
		if section.TakesPart(t, "tokens") {
			ts = append(ts, t)
			head = append(head, t.Title)
		}
	}
	if len(ts) == 0 {
		return
	}
	for _, n := range run.Ladder {
		var g, rt, inv *results.Step
		for _, t := range ts {
			g, rt, inv = firstOf(g, t.Find("tokens", "genacc", n)), firstOf(rt, t.Find("tokens", "runtx", n)), firstOf(inv, t.Find("tokens", "invariants", n))
		}
		if g == nil {
			continue
		}
		blocks, bs := 0.0, 0.0
		if rt != nil {
			blocks, bs = rt.Metrics["blocks"], rt.Metrics["block_size"]
		}
		fmt.Fprintf(b, "## Token transfers: n = %s accounts, m = %.0f blocks of %.0f transfers\n\n", section.Count(n), blocks, bs)
		fmt.Fprintf(b, "**Genacc** writes the n accounts in %.0f blocks of %.0f, a commit per block. **Checkacc** reads every account back in random order and checks it against its genesis state. "+
			"**Runtx** runs m blocks of random transfers of a fungible token, each with every check a chain makes (sufficient balance, no overflow), %s native tokens of gas burned and the sender's sequence number incremented; a commit per block. "+
			"Time in seconds per task (the seed's table).\n\n", g.Metrics["blocks"], g.Metrics["block_size"], gasPerTransfer(rt))
		cols := tokenColumns{ts: ts, head: head, n: n}
		tab := cols.timeTable()
		tab.Write(b)

		b.WriteString("Memory per task: the highest resident memory of the target's process during the task (RSS, sampled every second), MiB; and the database's size on disk after it.\n\n")
		tab = cols.memoryTable()
		tab.Write(b)

		tokens := 0.0
		if inv != nil {
			tokens = inv.Metrics["tokens"]
		}
		fmt.Fprintf(b, "Invariants, checked after Runtx on every account (a violation fails the run): the supply of each of the %.0f tokens is unchanged, except the native token's, which shrinks by exactly the gas burned; every sequence number equals the transfers its account sent; no balance is negative. "+
			"A transfer rejected by a check (balance too low, receiver would overflow) still pays gas and moves the sequence, as on chains that charge the fee first. The root hash is the store's after the last block (first 16 hex digits).\n\n", tokens)
		tab = cols.invariantTable()
		tab.Write(b)
	}
}

// tasks are the seed's tasks, the rows of its tables.
var tasks = []struct{ phase, label string }{{"genacc", "Genacc"}, {"checkacc", "Checkacc"}, {"runtx", "Runtx"}}

// tokenColumns are the columns of the tables of ladder size n: the
// targets that take part (ts), under head (the first cell the rows').
type tokenColumns struct {
	ts   []*results.Target
	head []string
	n    int64
}

// row is a table's row: label, then each target's cell as f makes it
// (n/a where the target cannot run the workload).
func (c tokenColumns) row(label string, f func(t *results.Target) string) []string {
	r := []string{label}
	for _, t := range c.ts {
		if why := t.NotApplicable("tokens", "", -1); why != "" && t.Find("tokens", "genacc", -1) == nil {
			r = append(r, "n/a: "+why)
			continue
		}
		r = append(r, f(t))
	}
	return r
}

// step is target t's step of phase.
func (c tokenColumns) step(t *results.Target, phase string) *results.Step {
	return t.Find("tokens", phase, c.n)
}

// timeTable is the seed's table: the seconds of each task, and Runtx's
// transfers per second.
func (c tokenColumns) timeTable() section.Table {
	tab := section.Table{Head: c.head}
	for _, k := range tasks {
		tab.Rows = append(tab.Rows, c.row(k.label, func(t *results.Target) string { return section.SecondsCell(c.step(t, k.phase)) }))
	}
	tab.Rows = append(tab.Rows, c.row("Runtx TPS (m × transfers per block / Runtx seconds)", func(t *results.Target) string {
		s := c.step(t, "runtx")
		if s == nil || s.Seconds == 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f", s.Metrics["tps"])
	}))
	return tab
}

// memoryTable is each task's highest resident memory and the database's
// size after Runtx.
func (c tokenColumns) memoryTable() section.Table {
	tab := section.Table{Head: append([]string{"Task (MiB)"}, c.head[1:]...)}
	for _, k := range tasks {
		tab.Rows = append(tab.Rows, c.row(k.label, func(t *results.Target) string {
			s := c.step(t, k.phase)
			if s == nil {
				return "—"
			}
			return section.MiB(section.StepRSS(s))
		}))
	}
	tab.Rows = append(tab.Rows, c.row("Database size after Runtx (MiB)", func(t *results.Target) string {
		s := c.step(t, "runtx")
		if s == nil {
			s = c.step(t, "genacc")
		}
		return section.DiskCell(s)
	}))
	return tab
}

// invariantTable is the invariants checked after Runtx, the transfers
// rejected and the root after the last block.
func (c tokenColumns) invariantTable() section.Table {
	tab := section.Table{Head: append([]string{"Check"}, c.head[1:]...)}
	invRow := func(label string, f func(s *results.Step) string) []string {
		return c.row(label, func(t *results.Target) string {
			s := c.step(t, "invariants")
			if s == nil {
				return "—"
			}
			return f(s)
		})
	}
	tab.Rows = append(tab.Rows,
		invRow("Supplies unchanged (native: minus burned gas)", func(s *results.Step) string {
			if bad := s.Metrics["supply_mismatches"]; bad > 0 {
				return fmt.Sprintf("**violated**: %.0f tokens", bad)
			}
			return fmt.Sprintf("ok (%.0f burned)", s.Metrics["gas_burned"])
		}),
		invRow("Sequence numbers = transfers sent", func(s *results.Step) string {
			if bad := s.Metrics["sequence_mismatches"]; bad > 0 {
				return fmt.Sprintf("**violated**: %.0f accounts", bad)
			}
			return fmt.Sprintf("ok (%s accounts)", section.Count(int64(s.Metrics["accounts"])))
		}),
		invRow("No negative balance", func(s *results.Step) string {
			if bad := s.Metrics["negative_balances"]; bad > 0 {
				return fmt.Sprintf("**violated**: %.0f balances", bad)
			}
			return "ok"
		}),
		c.row("Transfers rejected (balance too low / overflow)", func(t *results.Target) string {
			s := c.step(t, "runtx")
			if s == nil {
				return "—"
			}
			return fmt.Sprintf("%.0f / %.0f of %.0f", s.Metrics["rejected_insufficient"], s.Metrics["rejected_overflow"], s.Metrics["transfers"])
		}),
		c.row("Root after the last block", func(t *results.Target) string {
			s := c.step(t, "runtx")
			if s == nil {
				s = c.step(t, "genacc")
			}
			return roots.Cell(s)
		}),
		invRow("Check time (s)", func(s *results.Step) string { return section.SecondsCell(s) }),
	)
	return tab
}

func firstOf(a, b *results.Step) *results.Step {
	if a != nil {
		return a
	}
	return b
}

// gasPerTransfer is the gas each transfer paid, from the runtx figures.
func gasPerTransfer(rt *results.Step) string {
	if rt == nil || rt.Metrics["transfers"] == 0 {
		return "the study's"
	}
	return fmt.Sprintf("%.0f", rt.Metrics["gas_burned"]/rt.Metrics["transfers"])
}
