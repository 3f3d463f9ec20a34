//go:build linux

package sysinfo

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestCollect(t *testing.T) {
	h := Collect()
	t.Logf("%+v", h)
	if h.LogicalCPUs != runtime.NumCPU() {
		t.Errorf("LogicalCPUs = %d, want %d", h.LogicalCPUs, runtime.NumCPU())
	}
	if h.MemTotalBytes <= 0 {
		t.Errorf("MemTotalBytes = %d, want > 0", h.MemTotalBytes)
	}
	if h.Kernel == "" || h.Kernel == Unknown {
		t.Errorf("Kernel = %q, want a release string", h.Kernel)
	}
	if h.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", h.GoVersion, runtime.Version())
	}
	for name, v := range map[string]string{"Hostname": h.Hostname, "CPUModel": h.CPUModel, "OS": h.OS, "ClockSource": h.ClockSource} {
		if v == "" {
			t.Errorf("%s is empty; unknown values must be %q", name, Unknown)
		}
	}
	if h.PhysicalCores < 0 || h.PhysicalCores > h.LogicalCPUs*4 {
		t.Errorf("PhysicalCores = %d, implausible", h.PhysicalCores)
	}
}

func TestStorageOfTempDir(t *testing.T) {
	dir := t.TempDir()
	s, err := StorageOf(dir)
	if err != nil {
		t.Fatalf("StorageOf: %v", err)
	}
	t.Logf("%+v rotational=%v", s, derefBool(s.Rotational))
	checkStorage(t, s)
}

func TestStorageOfMissingPath(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "not", "yet", "created")
	s, err := StorageOf(missing)
	if err != nil {
		t.Fatalf("StorageOf(missing): %v", err)
	}
	checkStorage(t, s)
	if !strings.HasSuffix(s.Path, filepath.Join("not", "yet", "created")) {
		t.Errorf("Path = %q, want the requested subpath kept", s.Path)
	}
	if _, err := os.Stat(filepath.Join(base, "not")); !os.IsNotExist(err) {
		t.Errorf("StorageOf created something under %s (stat err %v)", base, err)
	}
	ref, err := StorageOf(base)
	if err != nil {
		t.Fatal(err)
	}
	if ref.MountPoint != s.MountPoint || ref.Filesystem != s.Filesystem {
		t.Errorf("missing subpath on %s/%s, parent on %s/%s", s.MountPoint, s.Filesystem, ref.MountPoint, ref.Filesystem)
	}
}

func TestStorageOfRelativeAndSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := StorageOf(filepath.Join(link, "sub"))
	if err != nil {
		t.Fatalf("StorageOf via symlink: %v", err)
	}
	realResolved, _ := filepath.EvalSymlinks(real)
	if want := filepath.Join(realResolved, "sub"); s.Path != want {
		t.Errorf("Path = %q, want symlink resolved to %q", s.Path, want)
	}
	checkStorage(t, s)

	rel, err := StorageOf(".")
	if err != nil {
		t.Fatalf("StorageOf(.): %v", err)
	}
	checkStorage(t, rel)
}

func checkStorage(t *testing.T, s Storage) {
	t.Helper()
	if s.Filesystem == "" || s.MountPoint == "" {
		t.Errorf("Filesystem %q, MountPoint %q: want both non-empty", s.Filesystem, s.MountPoint)
	}
	if !filepath.IsAbs(s.Path) || !underMount(s.Path, s.MountPoint) {
		t.Errorf("MountPoint %q is not a prefix of Path %q", s.MountPoint, s.Path)
	}
	if s.TotalBytes <= 0 || s.FreeBytes < 0 || s.FreeBytes > s.TotalBytes {
		t.Errorf("TotalBytes %d, FreeBytes %d: want 0 <= free <= total, total > 0", s.TotalBytes, s.FreeBytes)
	}
}

func derefBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestParseMountinfo(t *testing.T) {
	const info = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 27 0:27 / /data rw,relatime shared:5 master:1 - xfs /dev/sdb1 rw
31 27 0:28 / /data\040dir rw - tmpfs tmpfs rw
32 30 0:29 / /data/db rw - ext4 /dev/nvme0n1p1 rw
33 30 0:30 / /data/db rw - tmpfs over rw
garbage line
`
	ms := parseMountinfo([]byte(info))
	if len(ms) != 5 {
		t.Fatalf("parsed %d mounts, want 5: %+v", len(ms), ms)
	}
	if ms[1].fsType != "xfs" || ms[1].source != "/dev/sdb1" || ms[1].devMajor != 0 || ms[1].devMinor != 27 {
		t.Errorf("optional fields mishandled: %+v", ms[1])
	}
	if ms[2].mountPoint != "/data dir" {
		t.Errorf("escaped mount point = %q, want %q", ms[2].mountPoint, "/data dir")
	}
	cases := map[string]string{
		"/":                 "/",
		"/database":         "/",         // not /data: prefixes are whole components
		"/data":             "/data",     // the mount point itself
		"/data/x/y":         "/data",     // longest match
		"/data dir/x":       "/data dir", // unescaped name
		"/data/db/sst/0001": "/data/db",  // nested mount
	}
	for path, want := range cases {
		m, ok := findMount(ms, path)
		if !ok || m.mountPoint != want {
			t.Errorf("findMount(%q) = %q, %v; want %q", path, m.mountPoint, ok, want)
		}
	}
	// Two mounts on /data/db: the later one is on top.
	if m, _ := findMount(ms, "/data/db/x"); m.fsType != "tmpfs" {
		t.Errorf("over-mounted /data/db resolved to %s, want the later tmpfs", m.fsType)
	}
}

func TestParseHelpers(t *testing.T) {
	osr := "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
	if got := parseOSRelease([]byte(osr)); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("parseOSRelease = %q", got)
	}
	if got := parseOSRelease([]byte("PRETTY_NAME=\"\"\n")); got != "" {
		t.Errorf("parseOSRelease(empty) = %q", got)
	}
	if got := parseOSRelease([]byte("PRETTY_NAME='A \\ B'\n")); got != `A \ B` {
		t.Errorf("parseOSRelease(single quotes) = %q", got)
	}
	if got := parseMemTotal([]byte("MemTotal:       16384 kB\nMemFree: 1 kB\n")); got != 16384*1024 {
		t.Errorf("parseMemTotal = %d", got)
	}
	cpuinfo := "processor\t: 0\nmodel name\t: Test CPU\nphysical id\t: 0\ncore id\t: 0\n\n" +
		"processor\t: 1\nmodel name\t: Test CPU\nphysical id\t: 0\ncore id\t: 0\n\n" +
		"processor\t: 2\nmodel name\t: Test CPU\nphysical id\t: 0\ncore id\t: 1\n"
	if model, cores := parseCPUInfo([]byte(cpuinfo)); model != "Test CPU" || cores != 2 {
		t.Errorf("parseCPUInfo = %q, %d; want Test CPU, 2 (SMT siblings counted once)", model, cores)
	}
}
