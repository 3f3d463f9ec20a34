package latency

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func sample(t *testing.T) (string, int64) {
	t.Helper()
	h := New()
	for i := 1; i <= 1000; i++ {
		Record(h, time.Duration(i)*time.Microsecond)
	}
	enc, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return enc, h.TotalCount()
}

// The encoding is the one HdrHistogram logs carry: base64 once of the V2
// compressed form, whose cookie makes every payload start "HISTF".
func TestEncodeIsBase64OnceOfTheCompressedForm(t *testing.T) {
	enc, _ := sample(t)
	if !strings.HasPrefix(enc, "HISTF") {
		t.Fatalf("encoding starts %q, want the standard \"HISTF\"", enc[:min(len(enc), 12)])
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte{0x1c, 0x84, 0x93, 0x14}) {
		t.Fatalf("decoded payload starts % x, want the V2 compressed cookie 1c 84 93 14", raw[:4])
	}
}

// results.json files written before the fix hold the histograms
// base64-encoded twice; both forms decode to the same histogram, and
// anything else is an error, not an empty histogram.
func TestDecodeReadsStandardAndOldDoubleEncoding(t *testing.T) {
	enc, n := sample(t)
	old := base64.StdEncoding.EncodeToString([]byte(enc))
	for name, s := range map[string]string{"standard": enc, "old double": old} {
		h, err := Decode(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.TotalCount() != n || h.ValueAtQuantile(50) == 0 {
			t.Fatalf("%s: count %d p50 %d, want %d values", name, h.TotalCount(), h.ValueAtQuantile(50), n)
		}
	}
	for _, bad := range []string{"not base64 !", base64.StdEncoding.EncodeToString([]byte("plain text"))} {
		if _, err := Decode(bad); err == nil {
			t.Fatalf("Decode(%q) succeeded", bad)
		}
	}
}

func TestWriteLogFormat(t *testing.T) {
	enc, _ := sample(t)
	base := time.UnixMilli(1700000000123)
	var b bytes.Buffer
	err := WriteLog(&b, []string{"a comment"}, base, []LogInterval{
		{Start: 0, Length: time.Second, MaxNs: 1_500_000, Hist: enc},
		{Tag: "intended", Start: 0, Length: time.Second, MaxNs: 2_000_000, Hist: enc},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "#[a comment]\n" +
		"#[Histogram log format version 1.3]\n" +
		"#[StartTime: 1700000000.123 (seconds since epoch), 2023-11-14T22:13:20.123Z]\n" +
		"#[BaseTime: 1700000000.123 (seconds since epoch)]\n" +
		"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n" +
		"0.000,1.000,1.500," + enc + "\n" +
		"Tag=intended,0.000,1.000,2.000," + enc + "\n"
	if b.String() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := WriteLog(&b, nil, base, []LogInterval{{Tag: "a,b", Hist: enc}}); err == nil {
		t.Fatal("a tag with a comma was written")
	}
}
