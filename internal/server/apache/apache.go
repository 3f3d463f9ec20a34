// Package apache runs Apache httpd (Debian's apache2, 2.4) for storebench:
// a minimal configuration of our own (event MPM, Debian's stock MPM
// sizing, only the modules serving a static file needs), in the
// foreground (-DFOREGROUND), bound to 127.0.0.1 on a free port, every
// path under the instance directory. It serves the page of package
// server/web.
package apache

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"storebench/internal/server"
	"storebench/internal/server/proc"
	"storebench/internal/server/web"
)

func init() { server.Register(apacheServer{}) }

var packages = server.MustPackages("apache") // its manifest.txt

// modules is where Debian keeps the loadable modules.
const modules = "/usr/lib/apache2/modules"

// runUser is who the children serve as when we are root: the parent
// stays root (it binds the port and keeps its parent-death signal; a
// process that switches users itself loses it) and its children switch.
const runUser = "www-data"

// stopSignal: SIGTERM stops the parent and its children at once (SIGWINCH
// would wait for connections in progress).
const stopSignal = syscall.SIGTERM

type apacheServer struct{}

func (apacheServer) Name() string               { return "apache" }
func (apacheServer) Title() string              { return "Apache httpd" }
func (apacheServer) StopSignal() syscall.Signal { return stopSignal }

func (apacheServer) Check() error {
	if _, err := proc.Sbin("apache2"); err != nil {
		return proc.NotInstalled("apache2", "apache", packages...)
	}
	if _, err := os.Stat(filepath.Join(modules, "mod_mpm_event.so")); err != nil {
		return proc.NotInstalled("apache2's modules", "apache", packages...)
	}
	return nil
}

func (apacheServer) Install(ctx context.Context, log io.Writer) error {
	return proc.AptInstall(ctx, log, packages...)
}

func binary() string {
	if p, err := proc.Sbin("apache2"); err == nil {
		return p
	}
	return "/usr/sbin/apache2"
}

// mpm is Debian's mpm_event.conf sizing (the stock server the seed ran).
const mpm = `StartServers 2
MinSpareThreads 25
MaxSpareThreads 75
ThreadLimit 64
ThreadsPerChild 25
MaxRequestWorkers 150
MaxConnectionsPerChild 0
`

func (s apacheServer) Start(ctx context.Context, cfg server.Config) (*server.Instance, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	host := web.Host{Name: "apache", Bin: binary(), VersionFlag: "-v", VersionPrefix: "Server version: ", Sub: "run", RunUser: runUser}
	si, err := host.Setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l, version, run, logPath := si.Layout, si.Version, si.Sub, si.LogPath
	user := ""
	if si.AsRunUser {
		user = fmt.Sprintf("User %s\nGroup %s\n", runUser, runUser)
	}
	q := confQuote
	conf := fmt.Sprintf(`# Written by storebench: a minimal httpd serving one static page.
ServerRoot %[1]s
DefaultRuntimeDir %[2]s
PidFile %[9]s
Mutex %[10]s default
ServerName 127.0.0.1
Listen 127.0.0.1:%[3]d
LoadModule mpm_event_module %[11]s
LoadModule authz_core_module %[12]s
LoadModule mime_module %[13]s
%[5]s%[6]s
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 5
Timeout 60
ErrorLog %[7]s
LogLevel warn
TypesConfig /dev/null
AddType text/html .html
DocumentRoot %[8]s
<Directory />
    Require all denied
    AllowOverride None
</Directory>
<Directory %[8]s>
    Require all granted
</Directory>
`, q(l.Dir), q(run), l.Port, modules, user, mpm, q(logPath), q(l.DocRoot), q(filepath.Join(run, "apache2.pid")),
		q("file:"+run), q(filepath.Join(modules, "mod_mpm_event.so")), q(filepath.Join(modules, "mod_authz_core.so")), q(filepath.Join(modules, "mod_mime.so")))
	confPath, err := host.WriteConf(si, "apache2.conf", conf)
	if err != nil {
		return nil, err
	}
	workers := "as ourselves"
	if user != "" {
		workers = "children as " + runUser
	}
	return web.Start(ctx, cfg, web.Launch{Name: "apache", What: version, Version: version, Layout: l, Signal: stopSignal,
		// No access log: it would cost a write per request, which is not
		// what is measured. APACHE_* variables are what Debian's
		// apache2ctl sets; our config names every path itself.
		Spec: proc.Spec{Name: "apache2", Path: host.Bin, Args: []string{"-f", confPath, "-DFOREGROUND"}, Dir: l.Dir,
			Env:     []string{"APACHE_RUN_DIR=" + run, "APACHE_LOG_DIR=" + l.Dir, "APACHE_LOCK_DIR=" + run, "APACHE_PID_FILE=" + filepath.Join(run, "apache2.pid")},
			LogPath: logPath, Detach: cfg.Detach},
		Settings: map[string]string{
			"mpm":        "event: StartServers 2, ThreadsPerChild 25, MaxRequestWorkers 150 (Debian's mpm_event.conf)",
			"keep_alive": "On, MaxKeepAliveRequests 0 (unlimited), KeepAliveTimeout 5",
			"access_log": "off",
			"user":       workers,
			"config":     confPath,
		}})
}

// confQuote quotes an argument for httpd.conf: in double quotes, where
// only an inner quote is escaped (a backslash before anything else is
// kept as it is), so that a path with a space is one argument.
func confQuote(v string) string {
	return `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
}
