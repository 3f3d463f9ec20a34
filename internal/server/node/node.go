// Package node runs a small static server of ours (static.js, shipped in
// the binary) on the machine's Node.js, bound to 127.0.0.1 on a free
// port: one process, the page read once into memory. It serves the page
// of package server/web.
package node

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"storebench/internal/server"
	"storebench/internal/server/proc"
	"storebench/internal/server/web"
)

//go:embed static.js
var staticJS []byte

func init() { server.Register(nodeServer{}) }

var packages = server.MustPackages("node") // its manifest.txt

const stopSignal = syscall.SIGTERM

type nodeServer struct{}

func (nodeServer) Name() string               { return "node" }
func (nodeServer) Title() string              { return "Node.js" }
func (nodeServer) StopSignal() syscall.Signal { return stopSignal }

func (nodeServer) Check() error {
	if _, err := exec.LookPath("node"); err != nil {
		return proc.NotInstalled("node", "node", packages...)
	}
	return nil
}

func (nodeServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

func (s nodeServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	bin, err := exec.LookPath("node")
	if err != nil {
		return nil, s.Check()
	}
	l, err := web.Prepare("node", cfg)
	if err != nil {
		return nil, err
	}
	out, err := proc.Output(ctx, bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("node: version: %w", err)
	}
	version := proc.FirstLine(out)
	script := filepath.Join(l.Dir, "static.js")
	if err := os.WriteFile(script, staticJS, 0o644); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	logPath := filepath.Join(l.Dir, "node.log")
	// As root it runs as nobody (it needs no privilege and binds a high
	// port); started that way it keeps its parent-death signal.
	user := ""
	if os.Geteuid() == 0 {
		user = "nobody"
		if err := proc.CheckTraversable(l.DocRoot, user); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	who := "as ourselves"
	if user != "" {
		who = "as " + user
	}
	page := filepath.Join(l.DocRoot, filepath.Base(web.PagePath))
	return web.Start(ctx, cfg, web.Launch{Name: "node", What: "Node.js " + version, Version: version, Layout: l, Signal: stopSignal,
		Spec: proc.Spec{Name: "node", Path: bin, Args: []string{script, strconv.Itoa(l.Port), page},
			Dir: "/", LogPath: logPath, User: user, Detach: cfg.Detach},
		Settings: map[string]string{
			"server":     "storebench's static.js: one process, node's http module, the page held in memory",
			"keep_alive": "keepAliveTimeout 5 s, no request limit",
			"user":       who,
		}})
}
