// Package progress draws the live progress line of a run: one line per
// phase with operations done, ops/s and ETA, redrawn in place on a
// terminal and printed sparsely when output goes to a file or a pipe.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"storebench/internal/redact"
)

// Bar is the progress display. Its methods are safe for concurrent use.
// What it prints has its secrets masked (redact.Text): a message may
// quote a target's URI or a driver's error.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	label    string
	start    time.Time
	lastDraw time.Time
	lastLen  int
}

// New writes to w; tty selects in-place redrawing.
func New(w io.Writer, tty bool) *Bar { return &Bar{w: w, tty: tty} }

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Begin starts a phase.
func (b *Bar) Begin(label string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.label, b.start, b.lastDraw = redact.Text(label), time.Now(), time.Time{}
	if !b.tty {
		// In a log, only phases longer than the print interval get
		// progress lines; every phase gets its summary line from End.
		b.lastDraw = b.start
	}
	if b.tty {
		b.draw(b.label + " …")
	}
}

// Update reports done of total operations (total 0: unknown).
func (b *Bar) Update(done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	minGap := 100 * time.Millisecond
	if !b.tty {
		minGap = 10 * time.Second
	}
	if now.Sub(b.lastDraw) < minGap {
		return
	}
	b.lastDraw = now
	el := now.Sub(b.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	line := fmt.Sprintf("%s  %s", b.label, group(done))
	if total > 0 {
		pct := 100 * float64(done) / float64(total)
		line += fmt.Sprintf("/%s (%3.0f%%)", group(total), pct)
	}
	line += fmt.Sprintf("  %s ops/s", group(int64(rate)))
	if total > 0 && rate > 0 && done < total {
		eta := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
		line += fmt.Sprintf("  ETA %s", eta)
	}
	if b.tty {
		b.draw(line)
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// End finishes the phase with a summary line that stays on screen.
func (b *Bar) End(summary string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty {
		b.draw("")
		fmt.Fprint(b.w, "\r")
	}
	fmt.Fprintln(b.w, redact.Text(summary))
	b.lastLen = 0
}

// Println prints a message above the progress line.
func (b *Bar) Println(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.lastLen > 0 {
		fmt.Fprint(b.w, "\r"+strings.Repeat(" ", b.lastLen)+"\r")
		b.lastLen = 0
	}
	fmt.Fprintln(b.w, redact.Text(msg))
}

func (b *Bar) draw(line string) {
	pad := ""
	if n := b.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(b.w, "\r"+line+pad)
	b.lastLen = len(line)
}

// group formats 1234567 as 1,234,567.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
