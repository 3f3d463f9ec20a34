package servers_test

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/target"
	_ "storebench/internal/target/servers"
)

// silentListener accepts connections and never answers on them.
func silentListener(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// refusedAddr is a port nothing listens on.
func refusedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

var withinRE = regexp.MustCompile(`within ([0-9][0-9.]*(?:ms|s|m))\b`)

// Every server target's Open, against a closed port or a server that
// accepts and never answers, fails with one line that names the target,
// and a bound it names ("no answer within 4s") is the bound it keeps.
func TestOpenUnreachable(t *testing.T) {
	for _, info := range target.All() {
		if info.Kind != "server" || info.Open == nil || len(info.Schemes) == 0 {
			continue
		}
		for _, mode := range []string{"refused", "silent"} {
			t.Run(info.Name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				addr := refusedAddr(t)
				if mode == "silent" {
					addr = silentListener(t)
				}
				uri := fmt.Sprintf("%s://%s", info.Schemes[0], addr)
				switch info.Schemes[0] {
				case "postgres", "mysql":
					uri = fmt.Sprintf("%s://storebench@%s/storebench", info.Schemes[0], addr)
				case "mongodb":
					uri += "/storebench"
				case "http":
					uri += "/"
				}
				t0 := time.Now()
				c, err := info.Open(target.Options{URI: uri, Durability: kv.Sync})
				elapsed := time.Since(t0)
				if err == nil {
					c.Close()
					t.Fatalf("%s opened", uri)
				}
				msg := err.Error()
				t.Logf("after %s: %s", elapsed.Round(time.Millisecond), msg)
				if strings.ContainsAny(msg, "\r\n") {
					t.Errorf("not one line:\n%s", msg)
				}
				if !strings.HasPrefix(msg, info.Name+" at ") || strings.Count(msg, " at "+uri) != 1 {
					t.Errorf("does not name %s at %s once: %s", info.Name, uri, msg)
				}
				m := withinRE.FindStringSubmatch(msg)
				if m == nil {
					if mode == "silent" {
						t.Errorf("a silent server's error names no bound (\"no answer within ...\"): %s", msg)
					}
					if elapsed > 10*time.Second {
						t.Errorf("took %s: %s", elapsed, msg)
					}
					return
				}
				bound, err := time.ParseDuration(m[1])
				if err != nil {
					t.Fatalf("%q: %v", m[1], err)
				}
				// Generous slack: a loaded machine, never a second bound.
				if elapsed > bound+2*time.Second {
					t.Errorf("took %s, saying %q: %s", elapsed.Round(time.Millisecond), m[0], msg)
				}
			})
		}
	}
}
