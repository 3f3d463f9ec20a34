package study

import (
	"fmt"
	"unicode/utf8"
)

// MaxEcho is the most of a user's input (a URI, a flag's value, a path)
// an error message repeats: a 100 KB argument is named by its start and
// its length, not printed whole.
const MaxEcho = 200

// Clip is s, or its first MaxEcho bytes (whole characters) and its length.
func Clip(s string) string {
	if len(s) <= MaxEcho {
		return s
	}
	n := MaxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}
