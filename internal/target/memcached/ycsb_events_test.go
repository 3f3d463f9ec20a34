package memcached

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"storebench/internal/kv"
)

// An update on the event loop is a gets, then a cas of the merged record;
// a conflict (EXISTS) starts again from the gets, and a record gone
// (NOT_FOUND) is the update's ErrNotFound. The replies come a few bytes
// at a time, as a socket may deliver them.
func TestItemWireUpdateRetriesOnConflict(t *testing.T) {
	var c itemWire
	old := encodeFields(nil, [][]byte{[]byte("a0"), []byte("b0"), []byte("c0")})
	value := func(unique int) string {
		return fmt.Sprintf("VALUE k 0 %d %d\r\n%s\r\nEND\r\n", len(old), unique, old)
	}
	// reply feeds s in pieces and returns what Reply said at the end.
	reply := func(s string) (bool, error, []byte) {
		t.Helper()
		in := []byte{}
		for i := 0; i < len(s); i++ {
			in = append(in, s[i])
			n, done, _, opErr, err := c.Reply(in)
			if err != nil {
				t.Fatalf("reply %q: %v", in, err)
			}
			if n > 0 {
				if n != len(s) || i != len(s)-1 {
					t.Fatalf("consumed %d of %q after %d bytes", n, s, i+1)
				}
				return done, opErr, c.Next(nil)
			}
		}
		t.Fatalf("reply %q never consumed", s)
		return false, nil, nil
	}
	w := c.AppendWrite(nil, []byte("k"), [][]byte{nil, []byte("b1"), nil})
	if string(w) != "gets k\r\n" {
		t.Fatalf("first request %q", w)
	}
	merged := encodeFields(nil, [][]byte{[]byte("a0"), []byte("b1"), []byte("c0")})
	wantCas := func(unique int) string {
		return fmt.Sprintf("cas k 0 0 %d %d\r\n%s\r\n", len(merged), unique, merged)
	}
	done, opErr, next := reply(value(7))
	if done || opErr != nil || string(next) != wantCas(7) {
		t.Fatalf("after gets: done %v, %v, next %q; want %q", done, opErr, next, wantCas(7))
	}
	if done, opErr, next = reply("EXISTS\r\n"); done || opErr != nil || string(next) != "gets k\r\n" {
		t.Fatalf("after a conflict: done %v, %v, next %q; want the gets again", done, opErr, next)
	}
	if done, opErr, next = reply(value(8)); done || string(next) != wantCas(8) {
		t.Fatalf("after the second gets: done %v, %v, next %q", done, opErr, next)
	}
	if done, opErr, next = reply("STORED\r\n"); !done || opErr != nil || next != nil {
		t.Fatalf("after STORED: done %v, %v, next %q", done, opErr, next)
	}

	c.AppendWrite(nil, []byte("k"), [][]byte{nil, []byte("b1"), nil})
	reply(value(9))
	if done, opErr, _ = reply("NOT_FOUND\r\n"); !done || !errors.Is(opErr, kv.ErrNotFound) {
		t.Fatalf("a record deleted under the cas: done %v, %v; want ErrNotFound", done, opErr)
	}
	c.AppendWrite(nil, []byte("k"), [][]byte{nil, []byte("b1"), nil})
	if done, opErr, _ = reply("END\r\n"); !done || !errors.Is(opErr, kv.ErrNotFound) {
		t.Fatalf("an update of a missing record: done %v, %v; want ErrNotFound", done, opErr)
	}
	// Conflicts without end are bounded.
	c.AppendWrite(nil, []byte("k"), [][]byte{nil, []byte("b1"), nil})
	for i := 1; ; i++ {
		reply(value(i))
		done, opErr, _ := reply("EXISTS\r\n")
		if done {
			if opErr == nil || !strings.Contains(opErr.Error(), "conflicts in a row") || i != casRetries {
				t.Fatalf("gave up after %d conflicts: %v; want %d", i, opErr, casRetries)
			}
			break
		}
	}
	// An insert is one set.
	if w := c.AppendWrite(nil, []byte("k"), [][]byte{[]byte("x"), []byte("y"), []byte("z")}); !strings.HasPrefix(string(w), "set k 0 0 ") {
		t.Fatalf("insert %q", w)
	}
}
