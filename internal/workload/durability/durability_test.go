package durability

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storebench/internal/fault"
	"storebench/internal/kv"
	"storebench/internal/powerfs/powerfstest"
	"storebench/internal/reexec"
	"storebench/internal/report"
	"storebench/internal/results"
	_ "storebench/internal/server/all"
	"storebench/internal/server/servertest"
	"storebench/internal/study"
	"storebench/internal/target"
	_ "storebench/internal/target/all"
	_ "storebench/internal/target/servers"
	"storebench/internal/workload"
)

// The test binary is also the engine process the crashes kill, and the
// in-process servers' (FerretDB: `<this executable> server-main ...`).
func TestMain(m *testing.M) {
	if code, ran := reexec.Main(); ran {
		os.Exit(code)
	}
	servertest.Main(m)
}

// run executes one durability step of a few short trials on engine name.
func run(t *testing.T, name, crash string, class kv.Durability, trials int) *results.Step {
	t.Helper()
	return runWith(t, name, crash, class, trials, nil)
}

// nothingLost fails the test when the trials of res lost, tore or could
// not read back an acknowledged write (what: the engine and the crash).
func nothingLost(t *testing.T, what string, res *results.Step) {
	t.Helper()
	if res.Metrics["lost"] != 0 || res.Metrics["torn"] != 0 || res.Metrics["unrecoverable"] != 0 {
		t.Fatalf("%s: %v lost, %v torn, %v unrecoverable, want 0 (%s)",
			what, res.Metrics["lost"], res.Metrics["torn"], res.Metrics["unrecoverable"], res.Facts["unrecoverable"])
	}
}

// runWith is run with the target's options.
func runWith(t *testing.T, name, crash string, class kv.Durability, trials int, extra map[string]string) *results.Step {
	t.Helper()
	p := Params{Trials: trials, Writers: 2, AfterOps: 150, BatchEvery: 3, BatchSize: 4, ValueSize: 64,
		Crashes: []string{crash}, Classes: []string{string(class)}}
	res := runParams(t, name, p, extra)
	if res.Metrics["trials"] != float64(trials) || res.Metrics["acked"] < float64(trials*150) {
		t.Fatalf("trials %v, acknowledged %v: want %d trials of at least 150 acknowledged writes", res.Metrics["trials"], res.Metrics["acked"], trials)
	}
	return res
}

// runParams executes one durability step with p (one crash kind, one
// class) on engine name.
func runParams(t *testing.T, name string, p Params, extra map[string]string) *results.Step {
	t.Helper()
	if info, err := target.Lookup(name); err != nil || info.Open == nil {
		t.Fatalf("%s not built in: %v %s", name, err, info.Unavailable)
	}
	crash, class := p.Crashes[0], kv.Durability(p.Classes[0])
	raw, _ := json.Marshal(p)
	st := workload.Step{Workload: "durability", Phase: crash, N: int64(p.AfterOps), Seed: 7, Params: raw, Labels: results.Labels{LClass: string(class)}}
	opts := target.Options{Durability: kv.Sync, Extra: extra}
	if info, _ := target.Lookup(name); info.Embedded() {
		opts.Dir = filepath.Join(t.TempDir(), "db")
	}
	env := &workload.Env{Opened: &workload.OpenSpec{Target: name, Options: opts}}
	res, err := Durability{}.Execute(context.Background(), env, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s %s: %v; %s", name, crash, class, res.Metrics, Verdict(res))
	if res.Metrics["trials"] != float64(p.Trials) {
		t.Fatalf("trials %v, want %d", res.Metrics["trials"], p.Trials)
	}
	if res.Metrics["corrupted"] != 0 {
		t.Errorf("corrupted records: %v", res.Metrics["corrupted"])
	}
	return res
}

// The check can fail: SQLite with fsync switched off (synchronous=OFF,
// through the test-only TestNoSyncEnv) while it declares sync loses
// acknowledged writes on a power failure, and the verdict flags it; the
// same engine with fsync on loses none.
func TestPowerLossCatchesAnEngineThatDoesNotFsync(t *testing.T) {
	powerfstest.Need(t)
	t.Setenv(TestNoSyncEnv, "1")
	res := run(t, "sqlite", fault.PowerLoss, kv.Sync, 2)
	if res.Metrics["lost"] == 0 {
		t.Fatalf("SQLite synchronous=OFF lost no acknowledged write on a power failure: the check cannot fail")
	}
	if v := Verdict(res); !strings.Contains(v, "FAILED") {
		t.Errorf("verdict %q: want the declared-sync loss flagged", v)
	}
	// report.html shows the flag in red.
	res.Workload, res.Phase = "durability", fault.PowerLoss
	r := &results.Run{Study: "durability", Ladder: []int64{150}, Targets: []*results.Target{{Name: "sqlite", Title: "SQLite", Steps: []*results.Step{res}}}}
	if page := string(report.HTML(r, nil)); !strings.Contains(page, `<strong class="failed">FAILED: declared sync, lost acknowledged writes`) || !strings.Contains(page, ".failed { color: #b00020; }") {
		t.Errorf("report.html does not show the declared-sync loss in red")
	}
}

func TestPowerLossSyncedEngineLosesNothing(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "sqlite", fault.PowerLoss, kv.Sync, 2)
	if res.Metrics["lost"] != 0 || res.Metrics["torn"] != 0 {
		t.Fatalf("SQLite synchronous=FULL: %v lost, %v torn after a power failure, want 0", res.Metrics["lost"], res.Metrics["torn"])
	}
	if v := Verdict(res); v != "none lost" {
		t.Errorf("verdict %q", v)
	}
}

// Every embedded engine of the durability study, under sync, keeps every
// acknowledged write through a power failure on the power-loss file
// system (one trial each; the built-in study runs K = 20),
// whichever way it writes (GoLevelDB and Pebble append, bbolt and LMDB
// write pages in place, Badger its value log, SQLite its WAL, RocksDB and
// LevelDB through C++). That the same trials lose what was not synced is
// TestPowerLossCatchesAnEngineThatDoesNotFsync's.
func TestPowerLossEveryEmbeddedEngine(t *testing.T) {
	powerfstest.Need(t)
	for _, name := range []string{"goleveldb", "pebble", "bbolt", "badger", "sqlite", "rocksdb", "leveldb", "lmdb"} {
		t.Run(name, func(t *testing.T) {
			if info, err := target.Lookup(name); err != nil || info.Open == nil {
				t.Fatalf("%s not built in (make test builds every engine): %v %s", name, err, info.Unavailable)
			}
			res := run(t, name, fault.PowerLoss, kv.Sync, 1)
			if res.Metrics["lost"] != 0 || res.Metrics["torn"] != 0 || res.Metrics["unrecoverable"] != 0 {
				t.Fatalf("%s under sync: %v lost, %v torn, %v unrecoverable after a power failure, want 0", name, res.Metrics["lost"], res.Metrics["torn"], res.Metrics["unrecoverable"])
			}
		})
	}
}

// kill -9 keeps the page cache: even without fsync nothing acknowledged
// is lost by an engine that wrote it to the OS before acknowledging.
func TestKill9KeepsWhatReachedTheOS(t *testing.T) {
	t.Setenv(TestNoSyncEnv, "1")
	res := run(t, "sqlite", fault.Kill9, kv.Sync, 2)
	if res.Metrics["lost"] != 0 || res.Metrics["torn"] != 0 {
		t.Fatalf("SQLite after kill -9: %v lost, %v torn, want 0", res.Metrics["lost"], res.Metrics["torn"])
	}
}

// A crash point set as an offset (After) lets the writers run that long:
// every writer's quota is then 0, met at once, which must not crash the
// engine before it is written to.
func TestCrashAfterAnOffsetLetsTheWritersRun(t *testing.T) {
	const after = 300 * time.Millisecond
	p := Params{Trials: 1, Writers: 2, AfterOps: 150, After: study.Duration(after), BatchEvery: 3, BatchSize: 4, ValueSize: 64,
		Crashes: []string{fault.Kill9}, Classes: []string{string(kv.Sync)}}
	res := runParams(t, "sqlite", p, nil)
	if span := res.Metrics["acked_span_s_min"]; span < (after-50*time.Millisecond).Seconds() || res.Metrics["acked"] == 0 {
		t.Fatalf("crash %s after the writers started: %v acknowledged writes spanning %.3f s before it, want writes over about %s", after, res.Metrics["acked"], span, after)
	}
	if res.Metrics["lost"] != 0 || res.Metrics["lost_age_s_max"] != 0 {
		t.Errorf("SQLite after kill -9: %v lost (the oldest %v s before the crash), want none", res.Metrics["lost"], res.Metrics["lost_age_s_max"])
	}
}

// A server's crash: Redis's own process is killed, its AOF on the power-loss
// mount. appendfsync always loses nothing on a power failure; appendfsync
// no (async) loses what the OS had not written.
func TestPowerLossRedis(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "redis", fault.PowerLoss, kv.Sync, 2)
	if res.Metrics["lost"] != 0 || res.Metrics["torn"] != 0 {
		t.Fatalf("Redis appendfsync always: %v lost, %v torn after a power failure, want 0", res.Metrics["lost"], res.Metrics["torn"])
	}
	res = run(t, "redis", fault.PowerLoss, kv.Async, 2)
	if res.Metrics["lost"] == 0 {
		t.Errorf("Redis appendfsync no lost nothing on a power failure")
	}
	// appendfsync everysec is an async policy: under sync the server
	// still fsyncs every write, and loses nothing.
	everysec := map[string]string{"appendfsync": "everysec"}
	res = runWith(t, "redis", fault.PowerLoss, kv.Sync, 1, everysec)
	if res.Metrics["lost"] != 0 {
		t.Errorf("Redis under sync with option appendfsync everysec: %v lost after a power failure, want 0", res.Metrics["lost"])
	}
	// everysec fsyncs once the wall clock's second has turned since its
	// last fsync (or its start), and promises to lose at most that
	// second: the trial writes for three of them or more (whatever the
	// crash point asked) and finds the older writes kept, the loss
	// window within the promise. A harness that lost the AOF (or the
	// file system dropping a synced write) would lose them all.
	p := Params{Trials: 1, Writers: 2, AfterOps: 150, After: study.Duration(2 * time.Second), BatchEvery: 3, BatchSize: 4, ValueSize: 64,
		Crashes: []string{fault.PowerLoss}, Classes: []string{string(kv.Async)}}
	res = runParams(t, "redis", p, everysec)
	if m := res.Metrics; m["lost"] >= m["acked"] || m["lost_age_s_max"] > m["acked_span_s_min"]-0.1 {
		t.Errorf("Redis appendfsync everysec, writes over %.2f s: %v of %v acknowledged writes lost, the oldest %.2f s before the crash: want the writes older than its last fsync kept",
			m["acked_span_s_min"], m["lost"], m["acked"], m["lost_age_s_max"])
	}
	if m := res.Metrics; m["acked_span_s_min"] < 3 || m[MetricPromised] != 1 || m["lost_age_s_max"] > 2 || WindowExceeded(m) {
		t.Errorf("Redis appendfsync everysec: writes over %.2f s (want 3 s or more), promised %v s (want 1), loss window %.3f s / %.3f s (want within 2 s)",
			m["acked_span_s_min"], m[MetricPromised], m["lost_age_s_median"], m["lost_age_s_max"])
	}
	if v := Verdict(res); strings.Contains(v, "FAILED") || !strings.Contains(v, "within its promise") && res.Metrics["lost"] > 0 {
		t.Errorf("verdict %q", v)
	}
	if res.Metrics["torn"] != 0 {
		t.Errorf("Redis appendfsync everysec: %v batches torn", res.Metrics["torn"])
	}
	if !strings.Contains(res.Facts[FactMapping], "appendfsync everysec") {
		t.Errorf("step's durability mapping %q: want the server's appendfsync everysec", res.Facts[FactMapping])
	}
}

// memcached keeps nothing across a restart: it loses every acknowledged
// write, even under sync, and the report says so rather than failing it.
func TestCrashMemcached(t *testing.T) {
	powerfstest.Need(t)
	for _, crash := range []string{fault.PowerLoss, fault.Kill9} {
		res := run(t, "memcached", crash, kv.Sync, 1)
		if res.Metrics["lost"] != res.Metrics["acked"] {
			t.Errorf("memcached after %s: %v of %v acknowledged writes lost, want all", crash, res.Metrics["lost"], res.Metrics["acked"])
		}
		if res.Verify.Failed != 0 || !strings.Contains(Verdict(res), "no persistence") {
			t.Errorf("memcached after %s: %d verification failures, verdict %q: want none and the reason said", crash, res.Verify.Failed, Verdict(res))
		}
	}
}

// FerretDB (SQLite backend, its database on the power-loss mount) under sync loses
// nothing it acknowledged on a power failure.
func TestPowerLossFerretDB(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "ferretdb", fault.PowerLoss, kv.Sync, 1)
	if res.Metrics["lost"] != 0 || res.Metrics["unrecoverable"] != 0 {
		t.Fatalf("FerretDB under sync: %v lost, %v unrecoverable after a power failure, want 0 (%s)", res.Metrics["lost"], res.Metrics["unrecoverable"], res.Facts["unrecoverable"])
	}
}

// PostgreSQL (synchronous_commit on) loses nothing it acknowledged on a
// power failure or kill -9; its postmaster and backends are killed
// together (while the writers' connections are in use: they are closed
// only once the writers are done).
func TestPowerLossPostgres(t *testing.T) {
	powerfstest.Need(t)
	for _, crash := range []string{fault.PowerLoss, fault.Kill9} {
		res := run(t, "postgres", crash, kv.Sync, 1)
		nothingLost(t, "PostgreSQL synchronous_commit=on after "+crash, res)
	}
}

// MariaDB (innodb_flush_log_at_trx_commit=1) after kill -9 of mariadbd
// (its power failure: TestPowerLossMariaDB).
func TestKill9MariaDB(t *testing.T) {
	res := run(t, "mariadb", fault.Kill9, kv.Sync, 1)
	nothingLost(t, "MariaDB after kill -9", res)
}

// MariaDB (innodb_flush_log_at_trx_commit=1, its redo log fdatasynced at
// each commit) loses nothing it acknowledged on a power failure; at 2
// (async: the log is written at commit, fsynced about once a second) it
// loses what it acknowledged since that fsync, which shows the cache
// clear reaches InnoDB's files. InnoDB keeps its default
// innodb_flush_method=O_DIRECT on the power-loss mount.
func TestPowerLossMariaDB(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "mariadb", fault.PowerLoss, kv.Sync, 2)
	nothingLost(t, "MariaDB innodb_flush_log_at_trx_commit=1 after a power failure", res)
	if m := res.Facts[FactMapping]; !strings.Contains(m, "innodb_flush_log_at_trx_commit=1") {
		t.Errorf("step's durability mapping %q: want innodb_flush_log_at_trx_commit=1", m)
	}
	res = run(t, "mariadb", fault.PowerLoss, kv.Async, 2)
	if res.Metrics["lost"] == 0 {
		t.Errorf("MariaDB innodb_flush_log_at_trx_commit=2 lost nothing on a power failure")
	}
	if res.Metrics["torn"] != 0 || res.Metrics["unrecoverable"] != 0 {
		t.Errorf("MariaDB innodb_flush_log_at_trx_commit=2: %v torn, %v unrecoverable, want 0 (%s)",
			res.Metrics["torn"], res.Metrics["unrecoverable"], res.Facts["unrecoverable"])
	}
}

// Kafka's log: each record produced with acks=all and acknowledged by the
// broker's produce response; after the restart the topic is read from its
// start to its high watermark. Under sync (log.flush.interval.messages=1:
// each message fsynced before the acknowledgement) kill -9 of the broker
// loses nothing it acknowledged; under async neither (the broker writes
// the record to the OS before it answers, and the page cache survives).
func TestKill9Kafka(t *testing.T) {
	res := run(t, "kafka", fault.Kill9, kv.Sync, 1)
	nothingLost(t, "Kafka log.flush.interval.messages=1 after kill -9", res)
	if !strings.Contains(res.Facts[FactMapping], "log.flush.interval.messages=1") {
		t.Errorf("step's durability mapping %q: want the broker's flush policy", res.Facts[FactMapping])
	}
	nothingLost(t, "Kafka async after kill -9", run(t, "kafka", fault.Kill9, kv.Async, 1))
}

// Kafka's power failure: its log directory on the power-loss mount. Under sync nothing
// acknowledged is lost; under async (Kafka's default: the OS flushes the
// log, Kafka fsyncs only when it rolls a segment) acknowledged writes are
// lost, and the check says so.
func TestPowerLossKafka(t *testing.T) {
	powerfstest.Need(t)
	res := run(t, "kafka", fault.PowerLoss, kv.Sync, 1)
	nothingLost(t, "Kafka log.flush.interval.messages=1 after a power failure", res)
	async := run(t, "kafka", fault.PowerLoss, kv.Async, 1)
	if async.Metrics["unrecoverable"] != 0 {
		t.Fatalf("Kafka async after a power failure: did not restart: %s", async.Facts["unrecoverable"])
	}
	if async.Metrics["lost"] == 0 {
		t.Errorf("Kafka async lost no acknowledged write on a power failure: the check cannot fail")
	}
	t.Logf("power failure, acknowledged writes lost: sync %v of %v, async %v of %v",
		res.Metrics["lost"], res.Metrics["acked"], async.Metrics["lost"], async.Metrics["acked"])
}
