package aerospike_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v8"

	"storebench/internal/kv"
	"storebench/internal/server"
	"storebench/internal/server/aerospike"
	"storebench/internal/server/servertest"
)

func TestCheck(t *testing.T) {
	servertest.Installed(t, "aerospike")
}

// A record written through the client reads back; the configuration the
// server runs with is the one Settings state (asked over info); Stop
// leaves no asd.
func TestSyncWriteReadStop(t *testing.T) {
	t0 := time.Now()
	inst := servertest.StartConfig(t, "aerospike", server.Config{Durability: kv.Sync, MemoryBytes: 20 << 20, Records: 1_000_000})
	t.Logf("started in %s: %s pid %d, settings %v", time.Since(t0), inst.URI, inst.PID, inst.Settings)
	if !strings.HasPrefix(inst.URI, "aerospike://127.0.0.1:") || !strings.HasSuffix(inst.URI, "/"+aerospike.Namespace) {
		t.Fatalf("URI %q", inst.URI)
	}
	port := servicePort(t, inst.URI)
	c, err := as.NewClient("127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key, _ := as.NewKey(aerospike.Namespace, "t", "k")
	if err := c.Put(nil, key, as.BinMap{"v": []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(nil, key)
	if err != nil || string(rec.Bins["v"].([]byte)) != "hello" {
		t.Fatalf("get: %v, %v", rec, err)
	}
	info, err := c.GetNodes()[0].RequestInfo(as.NewInfoPolicy(), "namespace/"+aerospike.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	ns := info["namespace/"+aerospike.Namespace]
	// 1e6 records x 4 KiB in whole 8 MiB write blocks; post-write cache 20 MiB in whole 8 MiB blocks.
	for _, want := range []string{"storage-engine.flush-max-ms=1;", "storage-engine.direct-files=true",
		"storage-engine.post-write-cache=16777216", "storage-engine.file[0]=" + filepath.Join(inst.DataDir, "storebench.dat"),
		"storage-engine.filesize=4102029312", "strong-consistency=false"} {
		if !strings.Contains(ns, want) {
			t.Errorf("namespace info lacks %q:\n%s", want, ns)
		}
	}
	if !strings.HasPrefix(inst.Settings["durability"], "async (the study asked for sync") ||
		!strings.Contains(inst.Settings["durability_mapping"], "cannot fsync per write") ||
		inst.Settings["post-write-cache"] != "16 MiB (the target's cache, in whole 8 MiB write blocks)" {
		t.Errorf("settings %v", inst.Settings)
	}
	for _, d := range []string{"work/smd", "work/usr/udf/lua"} {
		if st, err := os.Stat(filepath.Join(filepath.Dir(inst.DataDir), d)); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if server.Alive(inst.PID) {
		t.Fatalf("asd %d alive after Stop", inst.PID)
	}
}

func TestAsyncSettings(t *testing.T) {
	inst := servertest.Start(t, "aerospike", kv.Async)
	if inst.Settings["durability"] != "async" || !strings.Contains(inst.Settings["durability_mapping"], "direct-files false") ||
		!strings.Contains(inst.Settings["namespace"], "1024 MiB") {
		t.Errorf("settings %v", inst.Settings)
	}
}

// asd waits for a port in use rather than exiting: the start gives up
// at its first complaint, saying so, and leaves no asd behind.
func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	inst, err := (aerospike.Server{}).Start(ctx, server.Config{Dir: t.TempDir(), Port: l.Addr().(*net.TCPAddr).Port, Durability: kv.Sync})
	if err == nil {
		_ = inst.Stop(ctx)
		t.Fatal("started on a port in use")
	}
	t.Logf("failed in %s: %v", time.Since(t0), err)
	if !strings.Contains(err.Error(), "Address already in use") || !strings.Contains(err.Error(), "in use, waiting") {
		t.Errorf("error does not say the port is taken: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("gave up only at the deadline")
	}
}

func servicePort(t *testing.T, uri string) int {
	t.Helper()
	rest := strings.TrimPrefix(uri, "aerospike://127.0.0.1:")
	p, _, _ := strings.Cut(rest, "/")
	var n int
	for _, ch := range p {
		n = n*10 + int(ch-'0')
	}
	if n <= 0 || n > 65535 {
		t.Fatalf("URI %q: no port", uri)
	}
	return n
}

// Without the build or the tarball, Check and Install say what to do.
func TestMissingBuildAndTarballSayWhatToDo(t *testing.T) {
	t.Setenv("STOREBENCH_HOME", t.TempDir())
	vendor := t.TempDir()
	t.Setenv("STOREBENCH_VENDOR", vendor)
	err := (aerospike.Server{}).Check()
	if err == nil || !strings.Contains(err.Error(), "not built") || !strings.Contains(err.Error(), aerospike.Tarball) ||
		!strings.Contains(err.Error(), "STOREBENCH_VENDOR") {
		t.Errorf("Check: %v", err)
	}
	err = aerospike.Install(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), vendor) {
		t.Errorf("Install: %v", err)
	}
	// A tarball that is not the vendored one is refused before any build.
	if err := os.WriteFile(filepath.Join(vendor, aerospike.Tarball), []byte("not it"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = aerospike.Install(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("Install of another tarball: %v", err)
	}
}
