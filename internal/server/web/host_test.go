package web

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"storebench/internal/server"
)

// Setup lays the instance out, reads the version from the first line the
// program prints, makes the server's own directory and names its log.
func TestHostSetup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "inst")
	// echo prints its argument: the "version" line.
	ho := Host{Name: "fake", Bin: "echo", VersionFlag: "fake version: fake/1.2.3", VersionPrefix: "fake version: ", Sub: "tmp", RunUser: "root"}
	si, err := ho.Setup(context.Background(), server.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if si.Version != "fake/1.2.3" || si.Sub != filepath.Join(dir, "tmp") || si.LogPath != filepath.Join(dir, "fake.log") || si.Port == 0 {
		t.Errorf("Setup = %+v", si)
	}
	if st, err := os.Stat(si.Sub); err != nil || !st.IsDir() {
		t.Errorf("%s: %v", si.Sub, err)
	}
	if si.AsRunUser != (os.Geteuid() == 0) {
		t.Errorf("AsRunUser %v as uid %d", si.AsRunUser, os.Geteuid())
	}
	path, err := ho.WriteConf(si, "fake.conf", "x 1\n")
	if b, rerr := os.ReadFile(path); err != nil || rerr != nil || string(b) != "x 1\n" || path != filepath.Join(dir, "fake.conf") {
		t.Errorf("WriteConf: %q, %v, %v", path, err, rerr)
	}
	ho.Bin = filepath.Join(dir, "no-such-program")
	if _, err := ho.Setup(context.Background(), server.Config{Dir: dir}); err == nil {
		t.Error("Setup with no program succeeded")
	}
}
