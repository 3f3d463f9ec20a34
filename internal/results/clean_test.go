package results

import (
	"reflect"
	"strings"
	"testing"
)

// hostileRun is a shared results.json whose writer put terminal escape
// sequences (OSC 52 clipboard write, window title, screen clear, C1 CSI)
// in every kind of string a report or a comparison prints.
const hostileRun = `{
  "schema_version": 3,
  "study": "ledger",
  "title": "T\u001b]52;c;ZWNobyBwd25lZA==\u0007itle",
  "status": "complete",
  "reason": "r\u001b[2J\u001b[H\r",
  "host": {"cpu_model": "CPU\u001b]0;owned\u0007 \u009b31m"},
  "targets": [{
    "name": "pebble",
    "title": "Pebble\u001b]52;c;cm0gLXJmIH4=\u0007",
    "status": "ok",
    "reason": "\u202eevil",
    "settings": {"k\u001b[31m": "v\u001b]52;c;eA==\u0007"},
    "not_applicable": [{"workload": "ledger", "phase": "stress", "n": 10, "status": "n/a", "reason": "why\u001b]52;c;eA==\u0007"}],
    "steps": [{"workload": "ledger", "phase": "insert", "n": 10, "unit": "u", "error": "e\u001b[2J", "verify": {"first": "f\u001bc"}}]
  }]
}`

// anyControl returns a string of v holding a control character, or "".
func anyControl(v any) string {
	var bad string
	MapStrings(reflect.ValueOf(v), func(s string) string {
		if bad == "" && strings.ContainsFunc(s, Control) {
			bad = s
		}
		return s
	})
	return bad
}

func TestDecodeEscapesControlCharacters(t *testing.T) {
	r, err := Decode([]byte(hostileRun))
	if err != nil {
		t.Fatal(err)
	}
	if s := anyControl(r); s != "" {
		t.Fatalf("a string read from a run keeps a control character: %q", s)
	}
	tg := r.Targets[0]
	for what, got := range map[string]string{
		"title":        r.Title,
		"target title": tg.Title,
		"setting":      tg.Settings[`k\x1b[31m`],
		"cpu_model":    r.Host.CPUModel,
		"reason":       tg.NA[0].Reason,
	} {
		if !strings.Contains(got, `\x1b`) {
			t.Errorf("%s %q: the ESC is not shown in its visible form", what, got)
		}
	}
	if want := `CPU\x1b]0;owned\x07 \u009b31m`; r.Host.CPUModel != want {
		t.Errorf("cpu_model %q, want %q", r.Host.CPUModel, want)
	}
	if tg.Reason != `\u202eevil` || r.Reason != `r\x1b[2J\x1b[H\x0d` {
		t.Errorf("reasons %q, %q", tg.Reason, r.Reason)
	}
}

func TestEscapeControlKeepsText(t *testing.T) {
	for _, s := range []string{"", "plain", "two\nlines\tand tab", "Ünïcode ✓", "a\r\nb"} {
		got := EscapeControl(s)
		if want := strings.ReplaceAll(s, "\r\n", "\n"); got != want {
			t.Errorf("EscapeControl(%q) = %q, want %q", s, got, want)
		}
	}
}
