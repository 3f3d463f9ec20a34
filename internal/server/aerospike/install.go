package aerospike

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"storebench/internal/home"
	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Version is the Aerospike Server Community Edition release storebench
// builds and runs.
const Version = "8.1.2.0"

// Tarball is the vendored source: Aerospike Server CE with all its
// submodules (no registry ships the server; see ../shared/vendor/README.md).
const Tarball = "aerospike-server-ce-" + Version + "-src.tar.xz"

// TarballSHA256 pins the tarball; the build is cached under it.
const TarballSHA256 = "1fb49fa77908910b54d564b58dfb86c013f79a265fbfdafc7cb9c8eeae0f8027"

// buildPackages are the Debian build dependencies (the upstream list is
// bin/install-dependencies.sh -d in the source).
var buildPackages = []string{"g++", "make", "cmake", "autoconf", "automake", "libtool", "pkg-config",
	"libssl-dev", "zlib1g-dev", "libcurl4-openssl-dev", "libldap2-dev", "git", "xz-utils"}

// BuildTimeout bounds the build: ~7 CPU minutes, 15 wall at nice 19 on
// a busy 2-core machine.
const BuildTimeout = 90 * time.Minute

// Home is storebench's own directory (package home).
func Home() string { return home.Dir() }

// InstallDir is <Home>/aerospike/<TarballSHA256>: bin/asd and a stamp.
func InstallDir() string { return filepath.Join(Home(), "aerospike", TarballSHA256) }

// Binary is the cached asd.
func Binary() string { return filepath.Join(InstallDir(), "bin", "asd") }

// stamp is written last: a build interrupted while caching has none.
func stamp() string { return filepath.Join(InstallDir(), "installed") }

func installed() error {
	if _, err := os.Stat(stamp()); err != nil {
		what := "run `storebench server install aerospike` or scripts/install-aerospike.sh (builds asd from " + Tarball + ", 7-12 CPU minutes once per machine)"
		if _, terr := FindTarball(); terr != nil {
			what = terr.Error()
		}
		return fmt.Errorf("Aerospike %s is not built (no %s): %s", Version, Binary(), what)
	}
	if fi, err := os.Stat(Binary()); err != nil || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("Aerospike %s build in %s is damaged (no executable asd): remove it and run `storebench server install aerospike`", Version, InstallDir())
	}
	return nil
}

// FindTarball finds the vendored source: $STOREBENCH_VENDOR/<Tarball>,
// else shared/vendor/<Tarball> in the directory of the checkout or of the
// storebench binary, or in one of their parents (the checkout's
// ../shared/vendor).
func FindTarball() (string, error) {
	if v := os.Getenv("STOREBENCH_VENDOR"); v != "" {
		p := filepath.Join(v, Tarball)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("STOREBENCH_VENDOR=%s has no %s: put the Aerospike source tarball there (see shared/vendor/README.md) or unset STOREBENCH_VENDOR", v, Tarball)
		}
		return p, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	var tried []string
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "shared", "vendor", Tarball)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			if len(tried) < 2 {
				tried = append(tried, filepath.Dir(p))
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("the Aerospike source %s was not found (looked in shared/vendor beside the checkout and its parents, e.g. %s): "+
		"copy it into ../shared/vendor/ next to the checkout, or set STOREBENCH_VENDOR to the directory holding it", Tarball, strings.Join(tried, ", "))
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Install builds asd from the vendored source once and caches it under
// InstallDir: the Debian build dependencies from apt, the tarball
// unpacked in a temporary directory, made a git checkout tagged with the
// version (the build's version script wants one), `nice -n 19 make -j2
// USE_EE=0`, then bin/asd copied out and the build tree removed. A
// cached build is checked and left alone.
func Install(ctx context.Context, log io.Writer) error {
	if installed() == nil {
		if out, err := proc.Output(ctx, Binary(), "--version"); err == nil {
			proc.Logf(log, "aerospike: cached build %s (%s)", Binary(), proc.FirstLine(out))
			return nil
		}
		proc.Logf(log, "aerospike: cached %s does not run: building again", Binary())
	}
	tarball, err := FindTarball()
	if err != nil {
		return err
	}
	sum, err := sha256File(tarball)
	if err != nil {
		return fmt.Errorf("aerospike: reading %s: %w", tarball, err)
	}
	if sum != TarballSHA256 {
		return fmt.Errorf("aerospike: %s has sha256 %s, storebench expects %s (Aerospike %s as vendored): replace it with the vendored tarball", tarball, sum, TarballSHA256, Version)
	}
	// One build at a time per cache: another storebench building it
	// makes this one wait, then find its result.
	unlock, err := server.LockInstance(ctx, filepath.Join(Home(), "aerospike"), "install", BuildTimeout, log)
	if err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	defer unlock()
	if installed() == nil {
		proc.Logf(log, "aerospike: built meanwhile by another storebench: %s", Binary())
		return nil
	}
	if err := proc.AptInstall(ctx, log, buildPackages...); err != nil {
		return fmt.Errorf("aerospike: build dependencies: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(Home(), "aerospike"), 0o755); err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	tmp, err := os.MkdirTemp("", "storebench-aerospike-build-")
	if err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	defer os.RemoveAll(tmp)
	logPath := filepath.Join(Home(), "aerospike", "build-"+TarballSHA256[:12]+".log")
	_ = os.Remove(logPath)
	bctx, cancel := context.WithTimeout(ctx, BuildTimeout)
	defer cancel()
	run := func(dir, name string, args ...string) error {
		return proc.Run(bctx, proc.Spec{Name: name + " " + strings.Join(args, " "), Path: name, Args: args, Dir: dir, LogPath: logPath,
			Env: []string{"GIT_AUTHOR_NAME=storebench", "GIT_AUTHOR_EMAIL=storebench@localhost",
				"GIT_COMMITTER_NAME=storebench", "GIT_COMMITTER_EMAIL=storebench@localhost"}})
	}
	proc.Logf(log, "aerospike: unpacking %s into %s", tarball, tmp)
	if err := run(tmp, "tar", "-xJf", tarball); err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	src := filepath.Join(tmp, "aerospike-server-"+Version)
	// The version script (build/version) runs git describe.
	for _, step := range [][]string{
		{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "aerospike-server " + Version + " (vendored source)"},
		{"tag", Version}, {"branch", "-m", "master"},
	} {
		if err := run(src, "git", append([]string{"-c", "core.autocrlf=false"}, step...)...); err != nil {
			return fmt.Errorf("aerospike: preparing the source tree: %w", err)
		}
	}
	t0 := time.Now()
	proc.Logf(log, "aerospike: building asd %s (nice -n 19 make -j2 USE_EE=0: 7-12 CPU minutes, 15-35 wall on 2 busy cores), log %s", Version, logPath)
	if err := run(src, "nice", "-n", "19", "make", "-j2", "USE_EE=0"); err != nil {
		return fmt.Errorf("aerospike: the build failed (full log %s; the Debian build dependencies are %s; fix what the log says, then run `storebench server install aerospike` again): %w",
			logPath, strings.Join(buildPackages, " "), err)
	}
	built := filepath.Join(src, "target", "Linux-x86_64", "bin", "asd")
	if m, _ := filepath.Glob(filepath.Join(src, "target", "*", "bin", "asd")); len(m) > 0 {
		built = m[0]
	}
	if _, err := os.Stat(built); err != nil {
		return fmt.Errorf("aerospike: make succeeded but left no asd (%v): see %s", err, logPath)
	}
	if err := os.RemoveAll(InstallDir()); err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(InstallDir(), "bin"), 0o755); err != nil {
		return fmt.Errorf("aerospike: %w", err)
	}
	if err := copyExecutable(built, Binary()); err != nil {
		return fmt.Errorf("aerospike: caching asd: %w", err)
	}
	if out, err := proc.Output(ctx, Binary(), "--version"); err != nil {
		return fmt.Errorf("aerospike: the built asd does not run: %w", err)
	} else {
		proc.Logf(log, "aerospike: built %s in %s: %s", Binary(), time.Since(t0).Round(time.Second), proc.FirstLine(out))
	}
	_ = os.Rename(logPath, filepath.Join(InstallDir(), "build.log"))
	return os.WriteFile(stamp(), []byte(fmt.Sprintf("aerospike-server %s built from %s (sha256 %s) in %s\n", Version, Tarball, TarballSHA256, time.Since(t0).Round(time.Second))), 0o644)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
