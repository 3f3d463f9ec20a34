package seedcmp

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// numberRE finds the numbers of a line as the seeds write them: 53.79,
// 1,272,671, 1e8, and a K, M or G stuck to the end (70K, 74M, 1.3G).
var numberRE = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?([KMG]?)`)

// groupedRE finds numbers whose thousands a space separates ("3 100
// QPS", "1 296 000 moving users").
var groupedRE = regexp.MustCompile(`\b\d{1,3}(?: \d{3})+\b`)

var suffix = map[string]float64{"K": 1e3, "M": 1e6, "G": 1e9}

// Numbers are every reading of the numbers on a line: each as written,
// and, where a K, M or G follows it, multiplied by it too.
func Numbers(line string) []float64 {
	var out []float64
	for _, m := range numberRE.FindAllStringSubmatch(line, -1) {
		raw := strings.TrimSuffix(m[0], m[1])
		v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimRight(raw, ","), ",", ""), 64)
		if err != nil {
			continue
		}
		out = append(out, v)
		if m[1] != "" {
			out = append(out, v*suffix[m[1]])
		}
	}
	for _, m := range groupedRE.FindAllString(line, -1) {
		if v, err := strconv.ParseFloat(strings.ReplaceAll(m, " ", ""), 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func same(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// Trace checks that a figure's value is written on one of the lines it
// cites in the seed's text (lines, the text split at newlines): a figure
// mistyped or cited at the wrong line is an error.
func Trace(lines []string, g Figure) error {
	var seen []string
	for _, l := range g.Source {
		if l < 1 || l > len(lines) {
			return fmt.Errorf("%s %s n=%g: line %d is not in the seed (%d lines)", g.Finding, g.Engine, g.N, l, len(lines))
		}
		for _, v := range Numbers(lines[l-1]) {
			if same(v, g.Value) {
				return nil
			}
		}
		seen = append(seen, fmt.Sprintf("line %d: %q", l, strings.TrimSpace(lines[l-1])))
	}
	return fmt.Errorf("%s %s n=%g: %v is not written on %s", g.Finding, g.Engine, g.N, g.Value, strings.Join(seen, "; "))
}
