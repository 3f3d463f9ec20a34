package ferretdb_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// A PostgreSQL URI with a password in it: postgres://user:secret@host.
var uriWithPassword = regexp.MustCompile(`postgres(ql)?://[^:/@\s]+:[^@\s]+@`)

// FerretDB on a managed PostgreSQL: both start, documents land in
// PostgreSQL, the measured tree holds both processes, the password shows
// nowhere, and Stop ends both.
func TestFerretDBOnPostgreSQL(t *testing.T) {
	t0 := time.Now()
	inst := servertest.Start(t, ferretdb.PGName, kv.Async)
	t.Logf("started in %v: %s pid %d version %s", time.Since(t0), inst.URI, inst.PID, inst.Version)
	for k, v := range inst.Settings {
		t.Logf("  %s: %s", k, v)
	}
	if inst.Version != ferretdb.PinnedVersion {
		t.Errorf("version %q, want %q", inst.Version, ferretdb.PinnedVersion)
	}
	if !strings.Contains(inst.Settings["backend"], "PostgreSQL 15") {
		t.Errorf("backend %q does not name PostgreSQL", inst.Settings["backend"])
	}
	if inst.Settings["postgres.synchronous_commit"] != "off" {
		t.Errorf("async: synchronous_commit %q, want off", inst.Settings["postgres.synchronous_commit"])
	}
	// PostgreSQL is below FerretDB's process: one tree, measured whole.
	kids := children(t, inst.PID)
	var pgPID int
	for _, c := range kids {
		if strings.HasPrefix(comm(c), "postgres") {
			pgPID = c
		}
	}
	if pgPID == 0 {
		t.Fatalf("no postgres among the children %v of pid %d", kids, inst.PID)
	}
	if !strings.HasPrefix(inst.DataDir, filepath.Dir(filepath.Dir(inst.LogPath))) {
		t.Errorf("data dir %s outside the instance dir of %s", inst.DataDir, inst.LogPath)
	}
	if _, err := os.Stat(filepath.Join(inst.DataDir, "PG_VERSION")); err != nil {
		t.Errorf("data dir %s is not PostgreSQL's: %v", inst.DataDir, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(inst.URI))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	coll := cl.Database("storebench").Collection("docs")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(7)}, {Key: "v", Value: "hello"}}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		V string `bson:"v"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: int64(7)}}).Decode(&got); err != nil || got.V != "hello" {
		t.Fatalf("found %+v, %v", got, err)
	}

	// The generated password is on no command line and in no file.
	for _, pid := range append([]int{inst.PID}, kids...) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if uriWithPassword.Match(b) {
			t.Errorf("pid %d has a password on its command line", pid)
		}
	}
	dir := filepath.Dir(inst.LogPath)
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		n++
		if uriWithPassword.Match(b) {
			t.Errorf("%s holds a PostgreSQL URI with its password", path)
		}
		return nil
	})
	if n == 0 {
		t.Fatalf("no files read under %s", dir)
	}

	if err := cl.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*server.DefaultStopTimeout)
	defer scancel()
	t1 := time.Now()
	if err := inst.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(t1))
	for _, pid := range []int{inst.PID, pgPID} {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
	// FerretDB stopped first, then PostgreSQL, cleanly.
	log, _ := os.ReadFile(inst.LogPath)
	if i, j := strings.Index(string(log), "FerretDB stopped"), strings.Index(string(log), "PostgreSQL stopped"); i < 0 || j < i {
		t.Errorf("log does not show FerretDB then PostgreSQL stopping:\n%s", log)
	}
}

// Killing FerretDB's process (kill -9, no clean stop) takes PostgreSQL
// with it: no server is left behind.
func TestFerretDBOnPostgreSQLKilled(t *testing.T) {
	s, err := server.Lookup(ferretdb.PGName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := s.Start(ctx, server.Config{Dir: tempDir(t), Durability: kv.Async})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever happens below, nothing is left running.
	defer inst.Stop(ctx)
	var pgPID int
	for _, c := range children(t, inst.PID) {
		if strings.HasPrefix(comm(c), "postgres") {
			pgPID = c
		}
	}
	if pgPID == 0 {
		t.Fatal("no postgres child")
	}
	if err := syscall.Kill(inst.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pgPID, 0) == nil && comm(pgPID) != "" && state(pgPID) != "Z" {
		if time.Now().After(deadline) {
			t.Fatalf("postgres pid %d outlived its FerretDB parent by 10s", pgPID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A port already taken fails the start with the reason, and the
// PostgreSQL it had started is stopped cleanly first.
func TestFerretDBOnPostgreSQLPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := server.Lookup(ferretdb.PGName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := tempDir(t)
	inst, err := s.Start(ctx, server.Config{Dir: dir, Port: l.Addr().(*net.TCPAddr).Port, Durability: kv.Sync})
	if err == nil {
		inst.Stop(ctx)
		t.Fatal("started on a port already in use")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error lacks the exit and the log's reason: %v", err)
	}
	pgLog, _ := os.ReadFile(filepath.Join(dir, "postgres", "postgres.log"))
	if !strings.Contains(string(pgLog), "database system is shut down") {
		t.Errorf("PostgreSQL was not shut down cleanly:\n%s", pgLog)
	}
}

func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "storebench-ferretdb-pg-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// children lists the children of every thread of pid (a server is forked
// from a thread locked for its parent-death signal, not the main one).
func children(t *testing.T, pid int) []int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("tasks of %d: %v", pid, err)
	}
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

func state(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
