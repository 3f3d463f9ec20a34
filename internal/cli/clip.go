package cli

import (
	"fmt"
	"io"
	"strings"

	"storebench/internal/study"
)

// clip is s cut to what an error message may repeat of a user's input.
func clip(s string) string { return study.Clip(s) }

// clipWords clips every space-free run of an error message (a URI, a
// quoted value, a path echoed from the command line), so that no error
// repeats more than study.MaxEcho bytes of any one input.
func clipWords(s string) string {
	if len(s) <= study.MaxEcho {
		return s
	}
	w := strings.Split(s, " ")
	for i := range w {
		w[i] = study.Clip(w[i])
	}
	return strings.Join(w, " ")
}

// printOut writes the command's final output (a report, a comparison) on
// stdout; a write that fails (stdout on a full disk, /dev/full, a closed
// pipe) is said on stderr and makes the command exit 1, instead of the
// report being lost with exit 0.
func printOut(stdout, stderr io.Writer, text string) int {
	if _, err := io.WriteString(stdout, text); err != nil {
		fmt.Fprintf(stderr, "storebench: cannot write the report on stdout: %v\n", clip(err.Error()))
		return exitFailed
	}
	return exitOK
}
