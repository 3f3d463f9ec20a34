package kafka

import (
	"encoding/base64"
	"storebench/internal/kv"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// Cluster ids are what StorageTool format takes as the value of -t: one
// that starts with "-" is read as an option and the format fails, so
// none may (in 10,000 draws, ~156 would without the rule).
func TestClusterIDNeverLooksLikeAnOption(t *testing.T) {
	for i := 0; i < 10000; i++ {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		if id[0] == '-' {
			t.Fatalf("cluster id %q starts with -", id)
		}
		if b, err := base64.RawURLEncoding.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("cluster id %q: %d bytes, %v", id, len(b), err)
		}
	}
}

// log.dirs with a space, a quote, a '#', a backslash and non-ASCII in it
// reads back whole under java.util.Properties' rules.
func TestPropertiesQuotePaths(t *testing.T) {
	dir := ` /tmp/with space/it's #1\x/données`
	props := properties(dir, 9092, 9093, kv.Sync)
	for _, line := range strings.Split(props, "\n") {
		if v, ok := strings.CutPrefix(line, "log.dirs="); ok {
			if got := readPropValue(t, v); got != dir {
				t.Fatalf("log.dirs reads back %q, want %q (line %q)", got, dir, line)
			}
			return
		}
	}
	t.Fatalf("no log.dirs in:\n%s", props)
}

// readPropValue undoes a .properties value's escapes (ISO-8859-1 file,
// leading blanks dropped) as java.util.Properties.load does.
func readPropValue(t *testing.T, v string) string {
	t.Helper()
	v = strings.TrimLeft(v, " \t\f")
	var b []rune
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c > 0x7e {
			t.Fatalf("byte %#x outside ASCII: the file is read as ISO-8859-1", c)
		}
		if c != '\\' {
			b = append(b, rune(c))
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'u':
			n, err := strconv.ParseUint(v[i+1:i+5], 16, 16)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, rune(n))
			i += 4
		default:
			b = append(b, rune(v[i]))
		}
	}
	return string(utf16.Decode(utf16ify(b)))
}

func utf16ify(rs []rune) []uint16 {
	out := make([]uint16, len(rs))
	for i, r := range rs {
		out[i] = uint16(r)
	}
	return out
}
