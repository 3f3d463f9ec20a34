package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"storebench/internal/server"
	"storebench/internal/server/proc"
)

// Host is an HTTP server that runs from a configuration file of ours
// (apache, nginx): what Setup needs to lay out an instance before the
// server writes that configuration.
type Host struct {
	// Name is the server's ("nginx"): its messages and its log's name.
	Name string
	// Bin is the program; VersionFlag makes it print its version on the
	// first line, after VersionPrefix ("nginx version: ").
	Bin, VersionFlag, VersionPrefix string
	// Sub is a directory of the instance's own that Setup makes (its run
	// or temporary files).
	Sub string
	// RunUser is who its workers serve as when we are root.
	RunUser string
}

// Site is an instance laid out by Setup.
type Site struct {
	Layout
	Version string
	// Sub is the directory Host.Sub, made; LogPath the instance's log.
	Sub, LogPath string
	// AsRunUser: we are root, so the workers switch to Host.RunUser, who
	// can reach the document root.
	AsRunUser bool
}

// Setup lays out an instance (Prepare), reads the server's version,
// makes Host.Sub and, when we are root, checks that Host.RunUser can
// reach the document root, in that order.
func (ho Host) Setup(ctx context.Context, cfg server.Config) (Site, error) {
	l, err := Prepare(ho.Name, cfg)
	if err != nil {
		return Site{}, err
	}
	out, err := proc.Output(ctx, ho.Bin, ho.VersionFlag)
	if err != nil {
		return Site{}, fmt.Errorf("%s: version: %w", ho.Name, err)
	}
	si := Site{Layout: l, Version: strings.TrimPrefix(proc.FirstLine(out), ho.VersionPrefix),
		Sub: filepath.Join(l.Dir, ho.Sub), LogPath: filepath.Join(l.Dir, ho.Name+".log")}
	if err := os.MkdirAll(si.Sub, 0o755); err != nil {
		return Site{}, fmt.Errorf("%s: %w", ho.Name, err)
	}
	if os.Geteuid() == 0 {
		si.AsRunUser = true
		if err := proc.CheckTraversable(l.DocRoot, ho.RunUser); err != nil {
			return Site{}, fmt.Errorf("%s: %w", ho.Name, err)
		}
	}
	return si, nil
}

// WriteConf writes the server's configuration conf to the file name of
// the instance directory and returns its path.
func (ho Host) WriteConf(si Site, name, conf string) (string, error) {
	path := filepath.Join(si.Dir, name)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("%s: %w", ho.Name, err)
	}
	return path, nil
}
