package ferretdb_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/ferretdb"
	"storebench/internal/server/servertest"
)

// TestMain lets the test binary stand in for storebench: Server.Start
// execs os.Executable() with `server-main ferretdb ARGS...`, which in a
// test is this binary, so it must dispatch that command to the registered
// server main (as `storebench server-main` does) instead of running tests.
// Any package whose tests start an in-process server needs the same
// TestMain (servertest.Main).
func TestMain(m *testing.M) { servertest.Main(m) }

func TestFerretDB(t *testing.T) {
	for _, d := range []kv.Durability{kv.Sync, kv.Async} {
		t.Run(string(d), func(t *testing.T) {
			t0 := time.Now()
			inst := servertest.Start(t, "ferretdb", d)
			t.Logf("started in %v: %s pid %d version %s", time.Since(t0), inst.URI, inst.PID, inst.Version)
			for k, v := range inst.Settings {
				t.Logf("  %s: %s", k, v)
			}
			if inst.Version != ferretdb.PinnedVersion {
				t.Errorf("version %q, want %q", inst.Version, ferretdb.PinnedVersion)
			}
			if inst.PID == os.Getpid() {
				t.Fatal("FerretDB must run in a process of its own")
			}
			if rss, err := rssKiB(inst.PID); err == nil {
				t.Logf("RSS %d MiB", rss/1024)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := mongo.Connect(options.Client().ApplyURI(inst.URI))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Disconnect(context.Background())
			coll := cl.Database("storebench").Collection("docs")
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "k1"}, {Key: "v", Value: "hello"}, {Key: "n", Value: 42}}); err != nil {
				t.Fatal(err)
			}
			var got struct {
				ID string `bson:"_id"`
				V  string `bson:"v"`
				N  int    `bson:"n"`
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "k1"}}).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.V != "hello" || got.N != 42 {
				t.Fatalf("found %+v", got)
			}
			entries, err := os.ReadDir(inst.DataDir)
			if err != nil || len(entries) == 0 {
				t.Fatalf("data dir %s: %v entries, %v", inst.DataDir, len(entries), err)
			}

			// FerretDB gives open client connections a few seconds to
			// finish when told to stop: close ours first.
			if err := cl.Disconnect(ctx); err != nil {
				t.Fatal(err)
			}
			sctx, scancel := context.WithTimeout(context.Background(), server.DefaultStopTimeout)
			defer scancel()
			t1 := time.Now()
			if err := inst.Stop(sctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("stopped in %v", time.Since(t1))
			if err := syscall.Kill(inst.PID, 0); err == nil {
				t.Fatalf("pid %d still alive after Stop", inst.PID)
			}
		})
	}
}

// A server that cannot start yields one error carrying its log's tail.
func TestStartFailureCarriesLog(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := server.Lookup("ferretdb")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst, err := s.Start(ctx, server.Config{Dir: t.TempDir(), Port: l.Addr().(*net.TCPAddr).Port, Durability: kv.Sync})
	if err == nil {
		inst.Stop(ctx)
		t.Fatal("started on a port already in use")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error does not carry the log's reason: %v", err)
	}
	t.Log(err)
}

// PinnedVersion names the FerretDB version when the binary carries no
// module information (test binaries): it must match go.mod.
func TestPinnedVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/FerretDB/FerretDB " + ferretdb.PinnedVersion
	if !strings.Contains(string(b), want) {
		t.Fatalf("go.mod does not require %q: update ferretdb.PinnedVersion", want)
	}
}

func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	var kib int64
	for _, line := range splitLines(string(b)) {
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kib); err == nil {
			return kib, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// An instance directory whose path has a space, a quote and a '#' in it
// (--out "/tmp/x/with space", a STOREBENCH_HOME with one): the server
// starts there, its readiness probe passes, and it answers.
func TestStartsInDirectoryWithSpace(t *testing.T) {
	inst := servertest.StartSpaced(t, "ferretdb", kv.Sync)
	if !strings.Contains(inst.DataDir+inst.LogPath, " ") {
		t.Fatalf("instance %q, log %q: no space", inst.DataDir, inst.LogPath)
	}
}
