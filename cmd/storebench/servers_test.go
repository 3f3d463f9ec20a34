package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"storebench/internal/kv"
	"storebench/internal/results"
	"storebench/internal/server/servertest"

	_ "storebench/internal/server/all"
)

const serverLedger = `name: servers-ledger
ladder: [10, 200]
concurrency: 4
targets: [redis, postgres, mariadb, cassandra, ferretdb]
workloads:
  - name: ledger
    params:
      payload: 100
      batch: 50
      selects: 50
      chains: {lengths: [10], samples: 1}
      stress: {duration: 1s, rate: 100}
      balance: {addresses: 500, reads: 50}
`

// The ledger study on every server storebench manages: each is started
// by the run itself, measured (server process tree and data directory
// apart from the client), and stopped.
func TestLedgerOnManagedServers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "servers-ledger.yaml")
	os.WriteFile(p, []byte(serverLedger), 0o644)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", p, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range run.Targets {
		if tr.Status != "ok" || tr.Server == nil || !tr.Server.Managed || tr.Server.Version == "" {
			t.Fatalf("%s: %s %s %+v", tr.Name, tr.Status, tr.Reason, tr.Server)
		}
		sel := tr.Find("ledger", "select", 200)
		if sel == nil || sel.Verify.Checked != 50 || sel.ServerResources == nil || sel.ServerResources.After.RSSBytes == 0 {
			t.Fatalf("%s: select step lacks verification or server resources: %+v", tr.Name, sel)
		}
		if ins := tr.Find("ledger", "insert", 200); ins.ServerResources.DiskAllocated == 0 {
			t.Fatalf("%s: server disk not measured", tr.Name)
		}
		if alive(tr.Server.PID) {
			t.Fatalf("%s: server pid %d still running after the run", tr.Name, tr.Server.PID)
		}
	}
	if !strings.Contains(stdout, "| FerretDB |") && !strings.Contains(stdout, "| FerretDB ") {
		t.Errorf("the MongoDB-protocol column must be called FerretDB")
	}
	if strings.Contains(stdout, "| MongoDB") {
		t.Errorf("report calls FerretDB MongoDB")
	}
}

const serverYCSB = `name: servers-ycsb
ladder: [500]
concurrency: 4
durability: async
targets: [pebble]
workloads:
  - name: ycsb
    params:
      workloads: [a]
      operations: 1000
      fields: 4
      field_length: 50
`

// YCSB-A on every server, reached by URI like any external server.
func TestYCSBAOnEveryServer(t *testing.T) {
	var uris []string
	for _, name := range []string{"redis", "postgres", "mariadb", "cassandra", "ferretdb", "memcached"} {
		// A server named by URI must hold nothing (else the run is
		// refused): a database, keyspace or server of this test's own
		// where the shared one holds other tests' data.
		switch name {
		case "redis":
			uris = append(uris, ownRedisDB(t, 15))
		case "cassandra":
			uris = append(uris, strings.TrimSuffix(servertest.URI(t, name), "/storebench")+"/storebench_cli_ycsb")
		case "ferretdb":
			uris = append(uris, strings.TrimSuffix(servertest.URI(t, name), "/storebench")+fmt.Sprintf("/cli_ycsb_%d", time.Now().UnixNano()))
		case "memcached":
			uris = append(uris, servertest.Start(t, name, kv.Sync).URI)
		default:
			uris = append(uris, servertest.URI(t, name))
		}
	}
	p := filepath.Join(t.TempDir(), "servers-ycsb.yaml")
	os.WriteFile(p, []byte(serverYCSB), 0o644)
	out := t.TempDir()
	// External servers keep the durability they were started with: the
	// shared ones are sync, so run the study in sync mode.
	stdout, stderr, code := runCLI(t, "run", p, "--out", out, "--durability", "sync", "--targets", strings.Join(uris, ","))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Read(filepath.Join(onlyDir(t, out), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Targets) != 6 {
		t.Fatalf("%d targets", len(run.Targets))
	}
	for _, tr := range run.Targets {
		a := tr.Find("ycsb", "a", 500)
		if tr.Status != "ok" || a == nil || a.Ops != 1000 || a.Verify.Checked == 0 || a.ByOp["READ"].Count == 0 || a.ByOp["UPDATE"].Count == 0 {
			t.Fatalf("%s: %s %s", tr.Name, tr.Status, tr.Reason)
		}
		if strings.Contains(tr.Server.URI, "storebench:storebench@") {
			t.Fatalf("%s: password written to results: %s", tr.Name, tr.Server.URI)
		}
	}
}

func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}
