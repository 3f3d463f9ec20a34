package latency

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// LogInterval is one line of an HdrHistogram interval log.
type LogInterval struct {
	// Tag names the histogram the line belongs to ("" for the log's
	// default, untagged one). Readers that are not asked for a tag read
	// only untagged lines.
	Tag string
	// Start is the interval's start as an offset from the log's base time.
	Start, Length time.Duration
	// MaxNs is the interval's largest value, in nanoseconds.
	MaxNs int64
	// Hist is the interval's histogram as Encode returns it.
	Hist string
}

// LogFormatVersion is the HdrHistogram interval log format written.
const LogFormatVersion = "1.3"

// machinePrefix begins the comment that names a log's machine shape.
const machinePrefix = "Machine: "

// MachineComment is the header comment of a log whose target ran on a
// machine shape (issue 35), the shape as results.json's target writes it:
// "Machine: cpus=0.5,memory=256MiB" ("name=NAME,..." for a named shape).
// HdrHistogram's readers skip comments other than StartTime and BaseTime,
// so the intervals read as before; LogMachine reads the shape back.
func MachineComment(machine string) string { return machinePrefix + machine }

// LogMachine is the machine shape a log's header names ("" none: this
// machine as it is). It reads the header comments only.
func LogMachine(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#[") {
			break
		}
		if m, ok := strings.CutPrefix(strings.TrimSuffix(line[2:], "]"), machinePrefix); ok {
			return m, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("hdr log: %w", err)
	}
	return "", nil
}

// WriteLog writes an HdrHistogram interval log (format version 1.3, as
// HdrHistogram's HistogramLogWriter writes it): comment lines, the format
// version, StartTime and BaseTime (both base, in seconds since the epoch,
// so the interval timestamps are relative to it), the CSV legend, then one
// line per interval: [Tag=T,]start,length,max,histogram with times in
// seconds and the max in milliseconds (values are nanoseconds, and HDR
// tools scale the max by 1e6 by default).
func WriteLog(w io.Writer, comments []string, base time.Time, ivs []LogInterval) error {
	bw := bufio.NewWriter(w)
	for _, c := range comments {
		if strings.ContainsAny(c, "\r\n") {
			return fmt.Errorf("hdr log: comment %q spans lines", c)
		}
		fmt.Fprintf(bw, "#[%s]\n", c)
	}
	secs := float64(base.UnixMilli()) / 1000
	fmt.Fprintf(bw, "#[Histogram log format version %s]\n", LogFormatVersion)
	fmt.Fprintf(bw, "#[StartTime: %.3f (seconds since epoch), %s]\n", secs, base.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(bw, "#[BaseTime: %.3f (seconds since epoch)]\n", secs)
	fmt.Fprintln(bw, `"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`)
	for _, iv := range ivs {
		if iv.Hist == "" {
			continue
		}
		if iv.Tag != "" {
			if strings.ContainsAny(iv.Tag, ", \t\r\n") {
				return fmt.Errorf("hdr log: tag %q has a comma or white space", iv.Tag)
			}
			fmt.Fprintf(bw, "Tag=%s,", iv.Tag)
		}
		fmt.Fprintf(bw, "%.3f,%.3f,%.3f,%s\n", iv.Start.Seconds(), iv.Length.Seconds(), float64(iv.MaxNs)/1e6, iv.Hist)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hdr log: %w", err)
	}
	return nil
}
