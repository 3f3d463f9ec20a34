package servers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"storebench/internal/ads"
	"storebench/internal/kv"
	"storebench/internal/redact"
	"storebench/internal/target"
)

// The conformance checks every server target's tests run. They take T, the
// part of testing.TB they use (*testing.T satisfies it), so that package
// testing stays out of the storebench binary.

// T is what the checks need from a test.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// OpenTimeout is the longest Open may take to report an unreachable
// server or refused credentials. The targets give up after 3–5 s of their
// own; the bound is what catches an Open that waits on a server forever,
// with room for a make test whose packages share 2 cores with their
// servers (MySQL's 4 s timeout once took 5.4 s there).
const OpenTimeout = 8 * time.Second

// TestPassword is the password the credential checks put in URIs: it must
// never show in an error or in Settings.
const TestPassword = "Pw-s3cret-7f2q"

// Open opens a registered target or fails the test, closing it when the
// returned cleanup runs.
func Open(t T, name string, o target.Options) io.Closer {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	start := time.Now()
	h, err := info.Open(o)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Logf("opened %s in %v", name, time.Since(start).Round(time.Millisecond))
	CheckCaps(t, info, h)
	return h
}

// CheckCaps checks that what a target declares it provides is what its
// handle implements, for the capabilities an engine interface of package
// target, kv or ads stands for: the coordinator matches steps against the
// declaration, so a wrong one would fail a step that was expected to run,
// or call n/a a step the target can run. The capabilities a workload
// finds through its own layouts (key-value records, ordered scans,
// secondary lookups, ...) are checked with the workloads, by package
// internal/workload/worktest/captest.
func CheckCaps(t T, info target.Info, h any) {
	t.Helper()
	engine := EngineCaps(h)
	for _, c := range target.AllCaps {
		has, ok := engine[c]
		if ok && info.Provides.Has(c) != has {
			t.Errorf("%s declares %s: %v, but its handle %T implements it: %v", info.Name, c, info.Provides.Has(c), h, has)
		}
	}
}

// EngineCaps are the capabilities that stand for an engine interface of
// package target, kv or ads, each with whether h implements it: what
// CheckCaps compares with a declaration. The layouts' check (captest)
// leaves these to CheckCaps.
func EngineCaps(h any) map[target.Cap]bool {
	_, isKV := h.(kv.Store)
	adsStore, isADS := h.(ads.Store)
	_, isPipeliner := h.(target.Pipeliner)
	_, isSelecter := h.(target.IntSelecter)
	_, isSQLDB := h.(target.SQLDB)
	_, isSQLDriver := h.(target.SQLDriver)
	_, isCompacter := h.(kv.Compacter)
	return map[target.Cap]bool{
		target.Pipeline:   isKV || isPipeliner,
		target.SQL:        isSelecter && (isSQLDB || isSQLDriver),
		target.Batch:      isKV || isADS,
		target.AuthRoots:  isADS && ads.Authenticated(adsStore),
		target.Compaction: isCompacter,
	}
}

// Info checks what a server target registers.
func Info(t T, name, server string, schemes ...string) {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if info.Kind != "server" || info.Title == "" || info.Version == "" || info.Open == nil || info.Server != server {
		t.Errorf("%s registered as %+v", name, info)
	}
	if !contains(info.OptionNames, "pool") {
		t.Errorf("%s: option names %v lack pool", name, info.OptionNames)
	}
	for _, s := range schemes {
		got, err := target.Lookup(s + "://127.0.0.1:1/x")
		if err != nil || got.Name != name {
			t.Errorf("scheme %s:// selects %q, %v; want %s", s, got.Name, err, name)
		}
	}
	if len(info.Schemes) != len(schemes) {
		t.Errorf("%s: schemes %v, want %v", name, info.Schemes, schemes)
	}
}

// Settings checks that a handle describes itself with the keys every
// server target reports, and never with a password.
func Settings(t T, h any, extraKeys ...string) map[string]string {
	t.Helper()
	d, ok := h.(kv.Describer)
	if !ok {
		t.Fatalf("%T does not implement kv.Describer", h)
	}
	s := d.Settings()
	for _, k := range append([]string{"server", "client", "durability", "pool", "layout.ycsb"}, extraKeys...) {
		if s[k] == "" {
			t.Errorf("Settings lacks %q: %v", k, s)
		}
	}
	for k, v := range s {
		if strings.Contains(v, TestPassword) {
			t.Errorf("Settings[%q] shows the password: %q", k, v)
		}
	}
	return s
}

// ClosedPort returns a local port nothing listens on (a listener bound then
// closed), so that a connection to it is refused.
func ClosedPort(t T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Unreachable opens the target on a closed port and checks that it fails
// within OpenTimeout with an error that names the target and the redacted
// URI and does not show the password. uriFormat takes the password and
// the port, e.g. "redis://bench:%s@127.0.0.1:%d/0".
func Unreachable(t T, name, uriFormat string) {
	t.Helper()
	uri := fmt.Sprintf(uriFormat, TestPassword, ClosedPort(t))
	err := OpenFails(t, name, uri)
	redacted := redact.Text(uri)
	if !strings.Contains(err.Error(), redacted) {
		t.Errorf("error does not name the redacted URI %s: %v", redacted, err)
	}
}

// OpenFails opens uri (Sync durability), checks that it fails within
// OpenTimeout without showing TestPassword and naming the target, and
// returns the error.
func OpenFails(t T, name, uri string) error {
	t.Helper()
	info, err := target.Lookup(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	start := time.Now()
	h, err := info.Open(target.Options{URI: uri, Durability: kv.Sync})
	took := time.Since(start)
	if err == nil {
		h.Close()
		t.Fatalf("open %s succeeded", redact.Text(uri))
	}
	t.Logf("open %s failed in %v: %v", redact.Text(uri), took.Round(time.Millisecond), err)
	if took >= OpenTimeout {
		t.Errorf("open took %v to fail, want < %v", took, OpenTimeout)
	}
	msg := err.Error()
	if strings.Contains(msg, TestPassword) {
		t.Errorf("error shows the password: %v", err)
	}
	if !strings.Contains(msg, name) {
		t.Errorf("error does not name the target %s: %v", name, err)
	}
	return err
}

// WithCredentials puts user and TestPassword into a URI's authority,
// replacing any it had.
func WithCredentials(uri, user string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest, "/"); slash < 0 || slash > at {
			rest = rest[at+1:]
		}
	}
	return scheme + "://" + user + ":" + TestPassword + "@" + rest
}

// ModuleVersion checks that go.mod requires module at version: each target
// states its client's version as a constant (test binaries carry no module
// build information to read it from).
func ModuleVersion(t T, module, version string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("%v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
				if len(f) >= 2 && f[0] == module {
					if f[1] != version {
						t.Errorf("go.mod requires %s %s, the target says %s", module, f[1], version)
					}
					return
				}
			}
			t.Errorf("go.mod does not require %s", module)
			return
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SetGet checks a target.Pipeliner: pipelined SETs read back by pipelined
// GETs on sessions of their own, an absent key as nil.
func SetGet(t T, h any) {
	t.Helper()
	p, ok := h.(target.Pipeliner)
	if !ok {
		t.Fatalf("%T does not implement target.Pipeliner", h)
	}
	a, err := p.NewSession(context.Background())
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer a.Close()
	b, err := p.NewSession(context.Background())
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer b.Close()
	prefix := fmt.Sprintf("setget:%d:", time.Now().UnixNano())
	keys := [][]byte{[]byte(prefix + "a"), []byte(prefix + "b"), []byte(prefix + "c")}
	vals := [][]byte{[]byte("xxx"), bytes.Repeat([]byte{'y'}, 100<<10), {}}
	if err := a.Set(keys, vals); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got := make([][]byte, 4)
	err = b.Get(append(keys, []byte(prefix+"missing")), func(i int, v []byte) error {
		if v != nil {
			v = append([]byte{}, v...)
		}
		got[i] = v
		return nil
	})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	for i := range vals {
		if got[i] == nil || !bytes.Equal(got[i], vals[i]) {
			t.Errorf("Get %s: %d bytes, want %d", keys[i], len(got[i]), len(vals[i]))
		}
	}
	if got[3] != nil {
		t.Errorf("Get of a missing key: %q, want nil", got[3])
	}
}

// Silent opens the target on a port that accepts connections but never
// answers (a hung server) and checks that Open gives up within
// OpenTimeout with an error that does not show the password. uriFormat is
// as for Unreachable.
func Silent(t T, name, uriFormat string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
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
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	OpenFails(t, name, fmt.Sprintf(uriFormat, TestPassword, l.Addr().(*net.TCPAddr).Port))
}
