package metrics

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// An address must name the interface it serves on.
func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9464": true, "[::1]:9464": true, "localhost:0": true, "10.0.0.7:9464": true, "[fe80::1%eth0]:9464": true,
		":9464": false, "0.0.0.0:9464": false, "[::]:9464": false, "127.0.0.1": false, "127.0.0.1:x": false, "": false,
		// a zone or another spelling never narrows an unspecified address (issue 33, 9)
		"[::%lo]:9464": false, "[::%1]:9464": false, "[0::0%eth0]:9464": false, "[::ffff:0.0.0.0]:9464": false,
		"[0:0:0:0:0:0:0:0%lo]:0": false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v", addr, err)
		}
	}
}

// New refuses an unspecified address with a zone, with a clear error,
// before it listens; an address that names an interface still serves.
func TestNewRefusesEveryInterface(t *testing.T) {
	for _, addr := range []string{"[::%lo]:0", "[::%1]:0", "[0::0%eth0]:0"} {
		m, err := New(addr)
		if err == nil {
			t.Errorf("New(%q) listens on %s", addr, m.URL())
			_ = m.Close()
			continue
		}
		if !strings.Contains(err.Error(), "every interface") {
			t.Errorf("New(%q): unclear error %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		if addr == "[::1]:0" {
			if ln, err := net.Listen("tcp", addr); err != nil {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			} else {
				_ = ln.Close()
			}
		}
		m, err := New(addr)
		if err != nil {
			t.Errorf("New(%q) = %v", addr, err)
			continue
		}
		host, _, _ := net.SplitHostPort(addr)
		if !strings.Contains(m.URL(), host) {
			t.Errorf("New(%q) serves %s", addr, m.URL())
		}
		_ = m.Close()
	}
}

// The address bound is checked as well: every interface, or another
// address than the one asked, is refused whatever led to it (a host name
// resolving to 0.0.0.0, say).
func TestCheckBound(t *testing.T) {
	for _, c := range []struct {
		addr  string
		bound net.Addr
		ok    bool
	}{
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5}, true},
		{"[::1]:0", &net.TCPAddr{IP: net.IPv6loopback, Port: 5}, true},
		{"localhost:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5}, true},
		{"[fe80::1%eth0]:0", &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 5, Zone: "eth0"}, true},
		{"evil.example:0", &net.TCPAddr{IP: net.IPv4zero, Port: 5}, false},
		{"evil.example:0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 5}, false},
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 5}, false},
		{"[::1]:0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 5}, false},
	} {
		if err := checkBound(c.addr, c.bound); (err == nil) != c.ok {
			t.Errorf("checkBound(%q, %v) = %v", c.addr, c.bound, err)
		}
	}
}

// A scraper that sent half a request when the run ends is closed, and
// what is said says so (issue 33, 13): not a bare "context deadline
// exceeded".
func TestCloseHalfSentScrape(t *testing.T) {
	m, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(m.URL(), "http://"), "/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("GET /metr")); err != nil {
		t.Fatal(err)
	}
	err = m.Close()
	if err != nil && !strings.Contains(err.Error(), "scrape of") {
		t.Errorf("Close with a half-sent scrape: unexplained %v", err)
	}
	// the stalled connection was closed: reading it ends
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the stalled scrape was not closed: %v", err)
	}
}
