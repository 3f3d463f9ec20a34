package captest_test

import (
	"strings"
	"testing"

	"storebench/internal/server"
	"storebench/internal/workload/worktest/captest"
)

// The database a workload's test uses is the last element of the shared
// server's URI path, as each server's manifest names it (testdb=): the
// places the name switch of captest.URI gave Redis, Cassandra and
// FerretDB before the manifests held them.
func TestTestDatabasesFromManifests(t *testing.T) {
	for _, c := range []struct{ server, base, scope, want string }{
		{"redis", "redis://:0123abcd@127.0.0.1:6390/0", "ycsb_test", "redis://:0123abcd@127.0.0.1:6390/9"},
		{"cassandra", "cassandra://127.0.0.1:9042/storebench", "ledger_test", "cassandra://127.0.0.1:9042/storebench_ledger_test"},
		{"ferretdb", "mongodb://127.0.0.1:27017/storebench", "ycsb_test", "mongodb://127.0.0.1:27017/ycsb_test_{time}"},
		{"ferretdb-pg", "mongodb://127.0.0.1:27018/storebench", "external", "mongodb://127.0.0.1:27018/external_{time}"},
		{"postgres", "postgres://storebench:pw@127.0.0.1:5432/storebench?sslmode=disable", "oltp_test", "postgres://storebench:pw@127.0.0.1:5432/oltp_test_{time}?sslmode=disable"},
		{"mariadb", "mysql://storebench:pw@127.0.0.1:3306/storebench", "oltp_test", "mysql://storebench:pw@127.0.0.1:3306/storebench_oltp_test_{time}"},
	} {
		m, err := server.ManifestOf(c.server)
		if err != nil {
			t.Fatal(err)
		}
		db := strings.ReplaceAll(m.TestDB, "{scope}", c.scope)
		got, err := captest.WithDatabase(c.base, db)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.server, got, err, c.want)
		}
	}
	for _, name := range []string{"memcached", "kafka", "redis-cluster", "cassandra-cluster", "apache"} {
		if m, err := server.ManifestOf(name); err != nil || m.TestDB != "" {
			t.Errorf("%s: testdb %q, %v: its tests share the server's own database", name, m.TestDB, err)
		}
	}
}

func TestWithDatabase(t *testing.T) {
	got, err := captest.WithDatabase("mongodb://u:p@127.0.0.1:1/storebench?authSource=admin", "x_1")
	if want := "mongodb://u:p@127.0.0.1:1/x_1?authSource=admin"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	for _, c := range [][2]string{
		{"redis://127.0.0.1:1", "9"},     // no path
		{"127.0.0.1:1/0", "9"},           // no scheme
		{"redis://127.0.0.1:1/0", ""},    // no name
		{"redis://127.0.0.1:1/0", "a/b"}, // not one element
		{"redis://:Pw-s3cret@127.0.0.1:1", "9"},
	} {
		if got, err := captest.WithDatabase(c[0], c[1]); err == nil {
			t.Errorf("WithDatabase(%q, %q) = %q, want an error", c[0], c[1], got)
		} else if strings.Contains(err.Error(), "Pw-s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
