package section

import (
	"fmt"
	"strings"
	"time"

	"storebench/internal/measure/procstat"
)

// Table is a simple row-major Markdown table.
type Table struct {
	Head []string
	Rows [][]string
	// Left is how many leading columns hold text (left-aligned); the
	// rest hold figures (right-aligned). 0 means 1.
	Left int
}

// Write appends the table and a blank line.
func (t Table) Write(b *strings.Builder) {
	b.WriteString("| " + strings.Join(t.Head, " | ") + " |\n|")
	for i := range t.Head {
		if i < max(t.Left, 1) {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
}

// Cell makes text safe inside a Markdown table cell.
func Cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// Seconds prints a duration in seconds with 3–4 significant digits, as
// the seeds do.
func Seconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 0.001:
		return fmt.Sprintf("%.6f s", s)
	case s < 1:
		return fmt.Sprintf("%.4f s", s)
	case s < 100:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}

// Secs prints seconds like Seconds, without the unit, for columns whose
// heading states it.
func Secs(s float64) string { return strings.TrimSuffix(Seconds(s), " s") }

// Latency prints nanoseconds in the unit that suits them.
func Latency(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", ns)
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.2f s", float64(ns)/1e9)
}

// Bytes prints a size with binary units, like the seed's "74M".
func Bytes(b int64) string {
	const u = 1024
	if b < u {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(u), 0
	for n := b / u; n >= u; n /= u {
		div *= u
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// MiB prints bytes in MiB with no decimals above 100, like the seed's MB.
func MiB(b int64) string {
	v := float64(b) / (1 << 20)
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// Count prints 100000 as 1e5 and 1500 as 1500.
func Count(n int64) string {
	if n >= 1000 {
		m, e := n, 0
		for m%10 == 0 {
			m /= 10
			e++
		}
		if m < 10 {
			return fmt.Sprintf("%de%d", m, e)
		}
	}
	return fmt.Sprint(n)
}

// Mem is a snapshot's memory: PSS for a process tree (shared pages once),
// RSS for a single process.
func Mem(s procstat.Snapshot) int64 {
	if s.PSSBytes > 0 {
		return s.PSSBytes
	}
	return s.RSSBytes
}
