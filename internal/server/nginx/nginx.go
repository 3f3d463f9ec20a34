// Package nginx runs nginx (Debian's nginx, 1.22) for storebench: a
// configuration of our own in the foreground (daemon off), the prefix
// (-p), the error log (-e, else nginx opens /var/log first) and every
// temporary path under the instance directory, bound to 127.0.0.1 on a
// free port. It serves the page of package server/web.
package nginx

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"

	"storebench/internal/server"
	"storebench/internal/server/proc"
	"storebench/internal/server/web"
)

func init() { server.Register(nginxServer{}) }

var packages = server.MustPackages("nginx") // its manifest.txt

// runUser is who the workers run as when we are root (the master stays
// root, binds the port and keeps its parent-death signal).
const runUser = "www-data"

// stopSignal: SIGTERM is nginx's fast shutdown (SIGQUIT would wait for
// open keep-alive connections).
const stopSignal = syscall.SIGTERM

type nginxServer struct{}

func (nginxServer) Name() string               { return "nginx" }
func (nginxServer) Title() string              { return "nginx" }
func (nginxServer) StopSignal() syscall.Signal { return stopSignal }

func binary() (string, error) {
	if p, err := proc.Sbin("nginx"); err == nil {
		return p, nil
	}
	return "", proc.NotInstalled("nginx", "nginx", packages...)
}

func (nginxServer) Check() error {
	_, err := binary()
	return err
}

func (nginxServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

func (s nginxServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	host := web.Host{Name: "nginx", Bin: bin, VersionFlag: "-v", VersionPrefix: "nginx version: ", Sub: "tmp", RunUser: runUser}
	si, err := host.Setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l, version, tmp, logPath := si.Layout, si.Version, si.Sub, si.LogPath
	user := ""
	if si.AsRunUser {
		user = "user " + runUser + ";\n"
	}
	q := confQuote
	conf := fmt.Sprintf(`# Written by storebench: nginx serving one static page.
daemon off;
%[1]sworker_processes auto;
pid %[6]s;
error_log %[3]s warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    client_body_temp_path %[7]s;
    proxy_temp_path %[8]s;
    fastcgi_temp_path %[9]s;
    uwsgi_temp_path %[10]s;
    scgi_temp_path %[11]s;
    types { text/html html; }
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 5s;
    server {
        listen 127.0.0.1:%[4]d;
        server_name 127.0.0.1;
        root %[5]s;
        location / { }
    }
}
`, user, "", q(logPath), l.Port, q(l.DocRoot), q(filepath.Join(tmp, "nginx.pid")),
		q(filepath.Join(tmp, "client_body")), q(filepath.Join(tmp, "proxy")), q(filepath.Join(tmp, "fastcgi")), q(filepath.Join(tmp, "uwsgi")), q(filepath.Join(tmp, "scgi")))
	confPath, err := host.WriteConf(si, "nginx.conf", conf)
	if err != nil {
		return nil, err
	}
	workers := "as ourselves"
	if user != "" {
		workers = "workers as " + runUser
	}
	return web.Start(ctx, cfg, web.Launch{Name: "nginx", What: "nginx " + version, Version: version, Layout: l, Signal: stopSignal,
		Spec: proc.Spec{Name: "nginx", Path: bin, Args: []string{"-p", l.Dir + "/", "-c", confPath, "-e", logPath},
			Dir: l.Dir, LogPath: logPath, Detach: cfg.Detach},
		Settings: map[string]string{
			"workers":    "worker_processes auto (one per core), worker_connections 4096",
			"keep_alive": "keepalive_requests 1000000, keepalive_timeout 5s",
			"access_log": "off",
			"sendfile":   "on",
			"user":       workers,
			"config":     confPath,
		}})
}

// confQuote quotes a parameter for nginx.conf: in double quotes, a quote
// or backslash escaped, so that a path with a space, ';', '#' or '{' is
// one parameter.
func confQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
