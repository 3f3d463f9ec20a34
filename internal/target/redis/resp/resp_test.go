package resp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "storebench/internal/server/redis"
	"storebench/internal/server/servertest"
	"storebench/internal/target/redis/resp"
)

func dial(t *testing.T, ctx context.Context) *resp.Conn {
	t.Helper()
	u, err := url.Parse(servertest.URI(t, "redis"))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	db, _ := strconv.Atoi(strings.TrimPrefix(u.Path, "/"))
	c, err := resp.Dial(ctx, u.Host, db, pw, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// syscr is the number of read system calls this process has made
// (/proc/self/io), EAGAIN answers included.
func syscr(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no syscr in /proc/self/io:\n%s", b)
	return 0
}

// TestRoundTripReadsOnce: a pipelined round trip costs one read system
// call, made once the reply is there. Reading at once after the write
// almost always finds nothing (EAGAIN) on a socket whose server has not
// answered yet: that read, and the park and wake behind it, is the
// client CPU that redis-benchmark's epoll loop never pays.
func TestRoundTripReadsOnce(t *testing.T) {
	c := dial(t, context.Background())
	const trips, depth = 2000, 16
	keys, vals := make([][]byte, depth), make([][]byte, depth)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("resp-test:%d", i))
		vals[i] = bytes.Repeat([]byte{byte('a' + i)}, 3+i)
	}
	if err := c.Set(keys, vals); err != nil {
		t.Fatal(err)
	}
	before := syscr(t)
	for n := 0; n < trips; n++ {
		err := c.Get(keys, func(i int, v []byte) error {
			if !bytes.Equal(v, vals[i]) {
				return fmt.Errorf("GET %s: %q, want %q", keys[i], v, vals[i])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// /proc/self/io counts this process: the reads of the test's own
	// machinery are few; 1.2 per trip leaves them room.
	per := float64(syscr(t)-before-1) / trips
	t.Logf("%.2f read system calls per round trip", per)
	if per > 1.2 {
		t.Errorf("%.2f read system calls per pipelined round trip, want 1", per)
	}
}
