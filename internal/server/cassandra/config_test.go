package cassandra

import (
	"net/url"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"storebench/internal/kv"
)

func parseYAML(t *testing.T, ic instanceConfig) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(ic.yaml()), &m); err != nil {
		t.Fatalf("cassandra.yaml does not parse: %v\n%s", err, ic.yaml())
	}
	return m
}

func TestYAMLDurability(t *testing.T) {
	for _, tc := range []struct {
		d          kv.Durability
		sync       string
		syncPeriod any
	}{
		{kv.Sync, "batch", nil},
		{"", "batch", nil},
		{kv.Async, "periodic", "10000ms"},
	} {
		s, err := syncOf(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		ic := instanceConfig{dir: "/x y/inst", nativePort: 9042, storagePort: 7000, sync: s, heapBytes: DefaultHeapBytes}
		m := parseYAML(t, ic)
		if m["commitlog_sync"] != tc.sync || m["commitlog_sync_period"] != tc.syncPeriod {
			t.Errorf("%q: commitlog_sync %v, period %v; want %v, %v", tc.d, m["commitlog_sync"], m["commitlog_sync_period"], tc.sync, tc.syncPeriod)
		}
		// Batch mode takes no window or period in 4.1.
		for _, k := range []string{"commitlog_sync_batch_window_in_ms", "commitlog_sync_group_window"} {
			if _, ok := m[k]; ok {
				t.Errorf("%q: %s set", tc.d, k)
			}
		}
		if m["native_transport_port"] != 9042 || m["storage_port"] != 7000 || m["listen_address"] != "127.0.0.1" {
			t.Errorf("ports/addresses: %v", m)
		}
		if dirs, _ := m["data_file_directories"].([]any); len(dirs) != 1 || dirs[0] != "/x y/inst/data/data" {
			t.Errorf("data_file_directories %v", m["data_file_directories"])
		}
		if m["commitlog_directory"] != "/x y/inst/data/commitlog" {
			t.Errorf("commitlog_directory %v", m["commitlog_directory"])
		}
	}
	if _, err := syncOf("fsync-maybe"); err == nil {
		t.Error("unknown durability accepted")
	}
}

func TestHeap(t *testing.T) {
	if h, _ := heapOf(0); h != 1<<30 {
		t.Errorf("default heap %d", h)
	}
	if h, _ := heapOf(2<<30 + 12345); h != 2<<30 {
		t.Errorf("heap not rounded to MiB: %d", h)
	}
	if _, err := heapOf(100 << 20); err == nil {
		t.Error("100 MiB heap accepted")
	}
	ic := instanceConfig{dir: "/d", heapBytes: 512 << 20}
	args := strings.Join(ic.jvmArgs("/lib", "/lib/jamm-0.3.2.jar"), " ")
	for _, want := range []string{"-Xms512m", "-Xmx512m", "-javaagent:/lib/jamm-0.3.2.jar",
		"-Dcassandra.config=file:///d/cassandra.yaml", "-cp /lib/*", "org.apache.cassandra.service.CassandraDaemon"} {
		if !strings.Contains(args, want) {
			t.Errorf("JVM args lack %q: %s", want, args)
		}
	}
}

// Paths with a space, a quote, a '#' and a '%' reach Cassandra whole: in
// cassandra.yaml, in the logback file, and as the file: URLs of both.
func TestPathsWithSpaceQuoted(t *testing.T) {
	dir := `/tmp/with space/it's #1 100%`
	ic := instanceConfig{dir: dir, nativePort: 9042, storagePort: 7000, heapBytes: DefaultHeapBytes}
	m := parseYAML(t, ic)
	for k, want := range map[string]string{"commitlog_directory": dir + "/data/commitlog", "hints_directory": dir + "/data/hints", "saved_caches_directory": dir + "/data/saved_caches", "cdc_raw_directory": dir + "/data/cdc_raw"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %q", k, m[k], want)
		}
	}
	for _, p := range []string{ic.yamlPath(), ic.logback()} {
		u, err := url.Parse(fileURL(p))
		if err != nil || u.Scheme != "file" || u.Path != p || u.Host != "" {
			t.Errorf("fileURL(%q) = %q: reads back %+v, %v", p, fileURL(p), u, err)
		}
	}
}
