// Package webtest checks an HTTP server package (apache, nginx, node):
// started by storebench, it serves the generated page at its default size
// and at a size given by the page_bytes option, states the page in its
// settings, and stops.
package webtest

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"storebench/internal/server"
	"storebench/internal/server/servertest"
	"storebench/internal/server/web"
)

// Run is the whole check for the server called name.
func Run(t *testing.T, name string) {
	t.Run("Installed", func(t *testing.T) { servertest.Installed(t, name) })
	t.Run("DefaultPage", func(t *testing.T) {
		inst := servertest.StartConfig(t, name, server.Config{})
		check(t, inst, web.DefaultPageBytes)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t0 := time.Now()
		if err := inst.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		t.Logf("stopped in %s", time.Since(t0))
		if server.Alive(inst.PID) {
			t.Fatalf("pid %d alive after Stop", inst.PID)
		}
		u, _ := url.Parse(inst.URI)
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", u.Host)
		}
	})
	// An instance directory with a space, a quote and a '#' in its path
	// (its configuration's paths quoted for the server's syntax).
	t.Run("DirectoryWithSpace", func(t *testing.T) {
		inst := servertest.StartSpaced(t, name, "")
		check(t, inst, web.DefaultPageBytes)
	})
	t.Run("PageBytes", func(t *testing.T) {
		inst := servertest.StartConfig(t, name, server.Config{Options: map[string]string{web.OptionPageBytes: "100000"}})
		check(t, inst, 100000)
	})
	t.Run("BadPageBytes", func(t *testing.T) {
		s, _ := server.Lookup(name)
		_, err := s.Start(context.Background(), server.Config{Dir: t.TempDir(), Options: map[string]string{web.OptionPageBytes: "-3"}})
		if err == nil || !strings.Contains(err.Error(), "page_bytes") {
			t.Fatalf("page_bytes -3 started: %v", err)
		}
	})
	t.Run("PortInUse", func(t *testing.T) {
		// Reachable by the user the server's workers run as.
		dir, err := os.MkdirTemp("", "storebench-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		_ = os.Chmod(dir, 0o755)
		servertest.PortInUse(t, name, dir, 10*time.Second)
	})
}

func check(t *testing.T, inst *server.Instance, size int) {
	t.Helper()
	u, err := url.Parse(inst.URI)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != web.PagePath {
		t.Fatalf("URI %q: want http://127.0.0.1:PORT%s (%v)", inst.URI, web.PagePath, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, body, err := web.Get(ctx, inst.URI)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", inst.URI, status, err)
	}
	if len(body) != size || web.Hash(body) != web.Hash(web.Page(size)) {
		t.Errorf("served %d bytes (sha256 %s), want the %d-byte page", len(body), web.Hash(body), size)
	}
	if !strings.Contains(inst.Settings["page"], web.Hash(body)) || inst.Version == "" || !server.Alive(inst.PID) {
		t.Errorf("settings %v, version %q, pid %d", inst.Settings, inst.Version, inst.PID)
	}
	// Another path is not the page.
	status, _, err = web.Get(ctx, "http://"+u.Host+"/nothing-here")
	if err != nil || status != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d, %v (want 404)", status, err)
	}
}
