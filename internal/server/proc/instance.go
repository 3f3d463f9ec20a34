package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// RunAs is the user a server that refuses root (PostgreSQL, MariaDB)
// runs as: osUser when we are root, else "" (ourselves).
func RunAs(osUser string) string {
	if os.Geteuid() == 0 {
		return osUser
	}
	return ""
}

// CheckOSUser is the part of a server's Check that needs its OS user
// when we are root: nil when we are not, or when the user exists
// (it comes with pkg).
func CheckOSUser(server, osUser, pkg string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if _, _, err := LookupIDs(osUser); err != nil {
		return fmt.Errorf("%s: the %s user is missing (it comes with %s): %w", server, osUser, pkg, err)
	}
	return nil
}

// InstanceDir makes dir absolute and creates it; when user is set, that
// user must be able to reach it (CheckTraversable). Errors start with
// "server: ".
func InstanceDir(server, dir, user string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", server, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("%s: creating %s: %w", server, abs, err)
	}
	if user != "" {
		if err := CheckTraversable(abs, user); err != nil {
			return "", fmt.Errorf("%s: %w", server, err)
		}
	}
	return abs, nil
}

// MkdirOwned creates the directory path (and its parents) and, when user
// is set, gives it (not its parents) to that user: the run directory
// where a server that runs as its own user makes its socket and pid file.
func MkdirOwned(path, user string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if user != "" {
		return Chown(path, user)
	}
	return nil
}

// Abandon stops a process whose start failed (its start's error says
// why, so the stop's own result is dropped): sig, then SIGKILL to its
// group after timeout, all within twice timeout.
func Abandon(h *Handle, sig syscall.Signal, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	_ = Stop(ctx, h, sig, timeout)
}

// DataDir is a server's data directory that a tool (initdb,
// mariadb-install-db) makes once per version and options, that later
// instances copy from the cache (Seed) and that a restart reuses.
type DataDir struct {
	// Server starts every message ("postgres").
	Server string
	// Path is the data directory.
	Path string
	// Marker is a file, relative to Path, that only a made data
	// directory has ("PG_VERSION").
	Marker string
	// Kind is what a non-empty Path without Marker is not ("a
	// PostgreSQL data directory").
	Kind string
	// Reused and Made name it in the lines "reusing <Reused> PATH" and
	// "<Made> created in 1.2s (how)".
	Reused, Made string
	// Tool makes it ("initdb"), in those lines.
	Tool string
	// Key names its cached copy (TemplateKey).
	Key string
	// Owner is the user a copy is given to ("": ourselves).
	Owner string
	// Log receives the progress lines (may be nil).
	Log io.Writer
}

// Exists reports whether Path holds a made data directory (its Marker).
func (d DataDir) Exists() bool {
	_, err := os.Stat(filepath.Join(d.Path, d.Marker))
	return err == nil
}

// Init makes the data directory unless one is there: an empty directory
// at Path is removed first, a non-empty one without Marker refused.
// create runs the tool (see Seed: it must make Path), once per Key; later
// ones copy its result. Either way the file system is synced after.
func (d DataDir) Init(ctx context.Context, create func(ctx context.Context) error) error {
	if d.Exists() {
		Logf(d.Log, "%s: reusing %s %s", d.Server, d.Reused, d.Path)
		return nil
	}
	if entries, err := os.ReadDir(d.Path); err == nil {
		if len(entries) > 0 {
			return fmt.Errorf("%s: %s is neither empty nor %s", d.Server, d.Path, d.Kind)
		}
		if err := os.Remove(d.Path); err != nil {
			return fmt.Errorf("%s: %w", d.Server, err)
		}
	}
	t0 := time.Now()
	cached, err := Seed(ctx, d.Key, d.Path, d.Owner, d.Log, create)
	if err != nil {
		return err
	}
	if err := SyncFS(d.Path); err != nil {
		return fmt.Errorf("%s: %w", d.Server, err)
	}
	how := d.Tool
	if cached {
		how = "copied from the cached " + d.Tool + " result"
	}
	Logf(d.Log, "%s: %s created in %s (%s)", d.Server, d.Made, time.Since(t0).Round(time.Millisecond), how)
	return nil
}

// Sbin finds the program name on PATH, or in /usr/sbin, which an
// ordinary user's PATH often lacks; the error is that of the last place
// tried.
func Sbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}
