package servertest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/server"
)

// PortInUse starts the server name in dir on a port another socket
// holds: the start must fail within the given time, saying the server
// exited during start-up and quoting its log ("Address already in use").
func PortInUse(t *testing.T, name, dir string, within time.Duration) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := server.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	inst, err := s.Start(ctx, server.Config{Dir: dir, Port: l.Addr().(*net.TCPAddr).Port, Durability: kv.Sync})
	if err == nil {
		_ = inst.Stop(ctx)
		t.Fatal("started on a port in use")
	}
	t.Logf("failed in %s: %v", time.Since(t0), err)
	if !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("error lacks the exit and the log tail: %v", err)
	}
	if time.Since(t0) > within {
		t.Errorf("took %s to fail", time.Since(t0))
	}
}

// Installed checks that the server name is installed (Check passes) and
// that Install is then a no-op that succeeds.
func Installed(t *testing.T, name string) {
	t.Helper()
	s, err := server.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := s.Install(context.Background(), nil); err != nil {
		t.Fatalf("Install when installed: %v", err)
	}
}
