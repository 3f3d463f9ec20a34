package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Installed reports whether a Debian package is installed.
func Installed(pkg string) bool {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.TrimSpace(string(out)) == "install ok installed"
}

// Missing returns the packages of pkgs that are not installed.
func Missing(pkgs ...string) []string {
	var out []string
	for _, p := range pkgs {
		if !Installed(p) {
			out = append(out, p)
		}
	}
	return out
}

// AptInstall installs the packages of pkgs that are missing with
// apt-get install -y, streaming apt's output to log. It runs apt-get
// update only when the install fails (an empty or stale package list),
// since an update is slow and usually unneeded. Nothing missing: nothing
// done.
func AptInstall(ctx context.Context, log io.Writer, pkgs ...string) error {
	missing := Missing(pkgs...)
	if len(missing) == 0 {
		Logf(log, "already installed: %s", strings.Join(pkgs, " "))
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("installing %s: apt-get not found (not a Debian system?)", strings.Join(missing, " "))
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("installing %s needs root: run sudo apt-get install -y %s", strings.Join(missing, " "), strings.Join(missing, " "))
	}
	install := append([]string{"install", "-y", "-q"}, missing...)
	Logf(log, "apt-get %s", strings.Join(install, " "))
	if err := apt(ctx, log, install...); err != nil {
		Logf(log, "install failed (%v): apt-get update, then again", err)
		if err := apt(ctx, log, "update", "-q"); err != nil {
			return fmt.Errorf("apt-get update: %w", err)
		}
		if err := apt(ctx, log, install...); err != nil {
			return fmt.Errorf("apt-get install %s: %w", strings.Join(missing, " "), err)
		}
	}
	if still := Missing(missing...); len(still) > 0 {
		return fmt.Errorf("apt-get reported success but %s still not installed", strings.Join(still, " "))
	}
	return nil
}

func apt(ctx context.Context, log io.Writer, args ...string) error {
	if log == nil {
		log = io.Discard
	}
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout = log
	cmd.Stderr = log
	return cmd.Run()
}

// NotInstalled is the error of a server's Check: what is missing and the
// two ways to install it.
func NotInstalled(what, server string, pkgs ...string) error {
	return fmt.Errorf("%s not installed: run \"storebench server install %s\" (apt-get install -y %s)", what, server, strings.Join(pkgs, " "))
}

// Output runs a command briefly (a --version) and returns its combined
// output.
func Output(ctx context.Context, path string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, FirstLine(string(out)))
	}
	return string(out), nil
}
