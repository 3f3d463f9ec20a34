package proc

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A process that never listens on its port is not ready, and
// WaitServingOrStop stops it rather than leave it running.
func TestWaitServingOrStopStops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	h, err := Start(context.Background(), Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, LogPath: filepath.Join(t.TempDir(), "sleep.log")})
	if err != nil {
		t.Fatal(err)
	}
	probe := func(ctx context.Context) error { return nil }
	if err := WaitServingOrStop(context.Background(), h, port, 300*time.Millisecond, syscall.SIGTERM, probe); err == nil {
		t.Fatal("a process not listening was ready")
	}
	if !h.Exited() {
		t.Error("the process runs on")
	}
}
