package web

import (
	"bytes"
	"testing"
)

// The page has exactly the size asked for, is HTML from the skeleton's
// size up, and is the same for the same size and different otherwise.
func TestPage(t *testing.T) {
	seen := map[string]int{}
	for _, n := range []int{1, 7, 100, 116, 117, 648, 4096, 1 << 20} {
		p := Page(n)
		if len(p) != n {
			t.Fatalf("Page(%d) has %d bytes", n, len(p))
		}
		if !bytes.Equal(p, Page(n)) {
			t.Fatalf("Page(%d) differs between calls", n)
		}
		if n >= 200 && (!bytes.HasPrefix(p, []byte("<!DOCTYPE html>")) || !bytes.HasSuffix(p, []byte("</html>\n"))) {
			t.Errorf("Page(%d) is not an HTML document: %q...%q", n, p[:20], p[n-10:])
		}
		h := Hash(p)
		if m, dup := seen[h]; dup {
			t.Errorf("Page(%d) and Page(%d) share a hash", n, m)
		}
		seen[h] = n
	}
	for _, bad := range []string{"0", "-1", "x", "67108865"} {
		if _, err := PageBytes(map[string]string{OptionPageBytes: bad}); err == nil {
			t.Errorf("page_bytes %q accepted", bad)
		}
	}
	if n, err := PageBytes(nil); n != 648 || err != nil {
		t.Errorf("default page_bytes %d, %v", n, err)
	}
}
