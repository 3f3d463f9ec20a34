// Package home is storebench's own directory for what outlives a run:
// installers' downloads (Cassandra, Kafka), leases of
// managed servers and `storebench server` instances. It is
// $STOREBENCH_HOME, else ~/.cache/storebench, the place the install
// scripts (scripts/install-*.sh) use.
package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Dir is $STOREBENCH_HOME, else ~/.cache/storebench; without a home
// directory, a folder of this user's under the temporary directory.
func Dir() string {
	if h := os.Getenv("STOREBENCH_HOME"); h != "" {
		return h
	}
	if d, err := os.UserHomeDir(); err == nil && d != "" {
		return filepath.Join(d, ".cache", "storebench")
	}
	return filepath.Join(os.TempDir(), "storebench-"+strconv.Itoa(os.Getuid()))
}

// Sub is a folder of Dir: Sub("kafka") is ~/.cache/storebench/kafka.
func Sub(name string) string { return filepath.Join(Dir(), name) }

// OthersTraverse says whether every existing directory from dir up to
// the root lets other users through (its x bit for others): whether a
// server that drops privileges (PostgreSQL, MariaDB) can reach dir.
func OthersTraverse(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for d := abs; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Shared is directory name under the temporary directory, which other
// users may traverse (0755), this user's own: made when missing, used
// when it is already this user's directory, refused when it is anything
// else (a link, a file, another user's directory), so that a name
// planted in a shared /tmp is never written through. For what must be
// found again by name (`storebench server` instances).
func Shared(name string) (string, error) {
	d := filepath.Join(os.TempDir(), name)
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	st, err := os.Lstat(d)
	if err != nil {
		return "", err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() {
		return "", fmt.Errorf("%s is not a directory of this user's (%v): refusing to use it", d, st.Mode())
	}
	return d, os.Chmod(d, 0o755)
}

// SharedTemp makes a new directory under the temporary directory, which
// other users may traverse (0755), its name prefix and a random suffix:
// one run's data, which no other run (the same study started in the
// same second elsewhere) can share.
func SharedTemp(prefix string) (string, error) {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return d, os.Chmod(d, 0o755)
}
