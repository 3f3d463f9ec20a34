package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"storebench/internal/server/proc"
)

// intServer stands for a server whose clean shutdown is SIGINT.
type intServer struct{}

func (intServer) Name() string                             { return "statetest-int" }
func (intServer) Title() string                            { return "state test" }
func (intServer) Check() error                             { return nil }
func (intServer) Install(context.Context, io.Writer) error { return nil }
func (intServer) Start(context.Context, Config) (*Instance, error) {
	return nil, errors.New("not here")
}
func (intServer) StopSignal() syscall.Signal { return syscall.SIGINT }

func init() { Register(intServer{}) }

func startProc(t *testing.T, args ...string) *proc.Handle {
	t.Helper()
	h, err := proc.Start(context.Background(), proc.Spec{Name: args[0], Path: args[0], Args: args[1:], LogPath: filepath.Join(t.TempDir(), "log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Stop(context.Background(), h, syscall.SIGKILL, time.Second) })
	return h
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := startProc(t, "sleep", "60")
	in := &Instance{Name: "statetest-sleep", URI: "mysql://u:p@127.0.0.1:1/db", PID: h.PID, DataDir: "/d/data",
		LogPath: "/d/log", Version: "1.2.3", Settings: map[string]string{"durability": "sync"}}
	if err := SaveState(dir, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "statetest-sleep", "instance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "uri", "pid", "data_dir", "log_path", "version", "settings", "stop_signal"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("instance.json lacks %q: %s", k, b)
		}
	}
	if raw["stop_signal"] != "SIGTERM" {
		t.Errorf("stop_signal = %v", raw["stop_signal"])
	}

	out, err := LoadState(dir, "statetest-sleep")
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != in.Name || out.URI != in.URI || out.PID != in.PID || out.DataDir != in.DataDir ||
		out.LogPath != in.LogPath || out.Version != in.Version || !reflect.DeepEqual(out.Settings, in.Settings) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	if !Alive(out.PID) {
		t.Fatal("not alive")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := out.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if Alive(h.PID) || time.Since(t0) > 2*time.Second {
		t.Fatalf("alive %v after %s", Alive(h.PID), time.Since(t0))
	}
	// Stopped: a later load reports no process, and stopping is a no-op.
	again, err := LoadState(dir, "statetest-sleep")
	if err != nil {
		t.Fatal(err)
	}
	if again.PID != 0 || Alive(again.PID) {
		t.Errorf("PID of a stopped instance = %d", again.PID)
	}
	if err := again.Stop(ctx); err != nil {
		t.Errorf("Stop of a stopped instance: %v", err)
	}
	if err := RemoveState(dir, "statetest-sleep"); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(dir, "statetest-sleep"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadState after RemoveState: %v", err)
	}
}

func TestStateStopSignal(t *testing.T) {
	dir := t.TempDir()
	// Ignores SIGTERM, exits on SIGINT: only the recorded signal stops it
	// within the deadline without a kill.
	h := startProc(t, "sh", "-c", `trap "" TERM; trap "exit 0" INT; while :; do sleep 0.05; done`)
	time.Sleep(100 * time.Millisecond) // let the shell install its traps
	if err := SaveState(dir, &Instance{Name: "statetest-int", PID: h.PID}); err != nil {
		t.Fatal(err)
	}
	inst, err := LoadState(dir, "statetest-int")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := inst.Stop(ctx); err != nil {
		t.Fatalf("Stop with the recorded SIGINT: %v", err)
	}
	if Alive(h.PID) {
		t.Fatal("alive after Stop")
	}
}

func TestStateReusedPID(t *testing.T) {
	dir := t.TempDir()
	h := startProc(t, "sleep", "60")
	if err := SaveState(dir, &Instance{Name: "statetest-reused", PID: h.PID}); err != nil {
		t.Fatal(err)
	}
	// Pretend the recorded server was another process that had this PID.
	path := filepath.Join(dir, "statetest-reused", "instance.json")
	b, _ := os.ReadFile(path)
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st.PIDStart++
	b, _ = json.Marshal(st)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	inst, err := LoadState(dir, "statetest-reused")
	if err != nil {
		t.Fatal(err)
	}
	if inst.PID != 0 {
		t.Errorf("PID = %d for a reused PID", inst.PID)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !Alive(h.PID) {
		t.Fatal("Stop of a stale state killed the process now holding the PID")
	}
}

func TestStopPIDKills(t *testing.T) {
	h := startProc(t, "sh", "-c", `trap "" TERM; while :; do sleep 0.05; done`)
	time.Sleep(100 * time.Millisecond)
	err := StopPID(context.Background(), h.PID, 0, 200*time.Millisecond)
	if err == nil {
		t.Fatal("StopPID of a process ignoring SIGTERM returned nil; want a kill error")
	}
	if Alive(h.PID) {
		t.Fatal("alive after StopPID")
	}
}

// A recorded cluster keeps every node: a later process sees it running
// while any node runs (node 1 gone), and stopping it stops them all, not
// node 1 alone.
func TestStateClusterStopsEveryNode(t *testing.T) {
	dir := t.TempDir()
	var hs []*proc.Handle
	var nodes []*Node
	for i := 0; i < 3; i++ {
		h := startProc(t, "sleep", "60")
		hs = append(hs, h)
		nodes = append(nodes, NewNode("node"+string(rune('1'+i)), "127.0.0.1:1", "/d", h, syscall.SIGTERM, nil))
	}
	in := &Instance{Name: "statetest-cluster", URI: "x://", PID: hs[0].PID, DataDir: "/d", Nodes: nodes}
	if err := SaveState(dir, in); err != nil {
		t.Fatal(err)
	}
	if err := proc.Stop(context.Background(), hs[0], syscall.SIGKILL, time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := LoadState(dir, "statetest-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Nodes) != 3 || out.Nodes[0].PID() != 0 || out.Nodes[1].PID() != hs[1].PID || out.PID != hs[1].PID {
		t.Fatalf("loaded PID %d, nodes %+v: want node 1 down, the instance running as node 2", out.PID, out.Nodes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := out.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		select {
		case <-h.Done():
		case <-time.After(3 * time.Second):
			t.Errorf("node %d (pid %d) still runs after Stop", i+1, h.PID)
		}
	}
}
