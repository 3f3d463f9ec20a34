// Package latency holds the latency histograms of storebench: HdrHistograms
// owned by one load goroutine each and handed to a collector on a tick, so
// the hot path never takes a lock shared with another goroutine, and the
// merge across goroutines is exact (histogram addition, not averaging).
package latency

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// Values are nanoseconds. 1 ns to 100 s at 3 significant digits: enough
	// for an in-cache LMDB read and for a multi-second fsync stall.
	lowest  = 1
	highest = int64(100 * time.Second)
	digits  = 3
)

// New returns an empty histogram with storebench's geometry.
func New() *hdr.Histogram { return hdr.New(lowest, highest, digits) }

// Record adds one value, clamping it into the trackable range so that an
// absurd stall is counted (as 100 s) rather than silently dropped.
func Record(h *hdr.Histogram, d time.Duration) {
	v := int64(d)
	if v < lowest {
		v = lowest
	} else if v > highest {
		v = highest
	}
	_ = h.RecordValue(v)
}

// Summary is the printed digest of a histogram. Times are nanoseconds.
type Summary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ns"`
	Min   int64   `json:"min_ns"`
	P50   int64   `json:"p50_ns"`
	P90   int64   `json:"p90_ns"`
	P99   int64   `json:"p99_ns"`
	P999  int64   `json:"p999_ns"`
	Max   int64   `json:"max_ns"`
}

// Summarize digests h; nil or empty histograms give a zero Summary.
func Summarize(h *hdr.Histogram) Summary {
	if h == nil || h.TotalCount() == 0 {
		return Summary{}
	}
	return Summary{
		Count: h.TotalCount(),
		Mean:  h.Mean(),
		Min:   h.Min(),
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}

// Encode returns the standard compressed HdrHistogram encoding (V2,
// deflate) in base64, once: the payload of an HdrHistogram interval log
// line ("HISTF..."), so any HDR tool decodes it. hdrhistogram-go's Encode
// already returns base64 text; encoding that again (as storebench did
// before) gives a string no HDR tool reads.
func Encode(h *hdr.Histogram) (string, error) {
	if h == nil {
		return "", nil
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// compressedCookie is the first two bytes of every V2 compressed
// encoding (cookie 0x1c849304 with the compressed flag).
var compressedCookie = []byte{0x1c, 0x84}

// Decode reverses Encode. An empty string gives an empty histogram. It
// also reads the doubly base64-encoded histograms of results.json files
// written by storebench before the encoding was fixed: one base64 layer
// decoded gives either the binary encoding (the standard form) or base64
// text again (the old form), which the cookie tells apart.
func Decode(s string) (*hdr.Histogram, error) {
	if s == "" {
		return New(), nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	payload := []byte(s)
	if !bytes.HasPrefix(raw, compressedCookie) {
		// The old double encoding: raw is itself the base64 text.
		payload = raw
	}
	h, err := hdr.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}
