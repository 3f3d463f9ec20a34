// Package web holds what the HTTP servers storebench runs (apache, nginx,
// node) share: the page they all serve, generated deterministically from
// its size (the seed's college.html was 648 bytes), the target option
// that sizes it, and the start-up steps after each has written its own
// configuration: wait until the page is served, then describe the
// instance.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"storebench/internal/server"
	"storebench/internal/server/proc"
)

const (
	// DefaultPageBytes is the seed's page size (college.html in seed 003).
	DefaultPageBytes = 648
	// MaxPageBytes bounds page_bytes.
	MaxPageBytes = 64 << 20
	// PagePath is where every managed server serves the page.
	PagePath = "/page.html"
	// OptionPageBytes is the target option (and server option) that sizes
	// the page.
	OptionPageBytes = "page_bytes"
	// startTimeout bounds start-up; each is ready in ~0.1 s.
	startTimeout = 30 * time.Second
)

// PageBytes reads page_bytes from a target's options (default 648).
func PageBytes(opts map[string]string) (int, error) {
	v, ok := opts[OptionPageBytes]
	if !ok || v == "" {
		return DefaultPageBytes, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageBytes {
		return 0, fmt.Errorf("%s %q: want a whole number of bytes 1..%d", OptionPageBytes, v, MaxPageBytes)
	}
	return n, nil
}

// Page is the page of exactly n bytes: an HTML document whose text is
// made of numbered words, so two sizes never share a hash and the same
// size always has the same one. Below the size of the HTML skeleton it is
// text alone.
func Page(n int) []byte {
	if n <= 0 {
		return nil
	}
	const head = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>storebench page</title></head>\n<body>\n<p>"
	const tail = "</p>\n</body></html>\n"
	fillN := n - len(head) - len(tail)
	var b bytes.Buffer
	b.Grow(n)
	if fillN < 0 {
		fillN = n
	} else {
		b.WriteString(head)
	}
	start := b.Len()
	for i := 0; b.Len()-start < fillN; i++ {
		if i > 0 && i%8 == 0 {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("word")
		b.WriteString(strconv.Itoa(i))
	}
	b.Truncate(start + fillN)
	if fillN != n {
		b.WriteString(tail)
	}
	return b.Bytes()
}

// Hash is the page's SHA-256, hex.
func Hash(page []byte) string {
	s := sha256.Sum256(page)
	return hex.EncodeToString(s[:])
}

// Layout is where an instance keeps its files.
type Layout struct {
	Dir, DocRoot, DataDir string
	Port                  int
	Page                  []byte
}

// Prepare makes the instance directory, its document root holding the
// page (world-readable: a server's workers may run as another user) and
// picks the port.
func Prepare(name string, cfg server.Config) (Layout, error) {
	n, err := PageBytes(cfg.Options)
	if err != nil {
		return Layout{}, fmt.Errorf("%s: %w", name, err)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return Layout{}, fmt.Errorf("%s: %w", name, err)
	}
	l := Layout{Dir: dir, DocRoot: filepath.Join(dir, "data", "htdocs"), DataDir: filepath.Join(dir, "data"), Page: Page(n)}
	if err := os.MkdirAll(l.DocRoot, 0o755); err != nil {
		return Layout{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(l.DocRoot, filepath.Base(PagePath)), l.Page, 0o644); err != nil {
		return Layout{}, fmt.Errorf("%s: writing the page: %w", name, err)
	}
	if l.Port, err = cfg.ListenPort(); err != nil {
		return Layout{}, fmt.Errorf("%s: %w", name, err)
	}
	return l, nil
}

// URI is the page's URL on the instance: what the targets request.
func (l Layout) URI() string { return fmt.Sprintf("http://127.0.0.1:%d%s", l.Port, PagePath) }

// Get fetches url once (a probe, not the benchmark's client) and returns
// the status and body.
func Get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPageBytes+1))
	return resp.StatusCode, body, err
}

// Launch is a web server's process, ready to start once the server has
// written its configuration.
type Launch struct {
	// Name is the server's ("apache"): its messages and its instance.
	Name string
	// What the start's line calls it ("nginx 1.22.1").
	What    string
	Version string
	Layout  Layout
	// Spec is the process; its LogPath is the instance's log.
	Spec proc.Spec
	// Signal stops it cleanly.
	Signal syscall.Signal
	// Settings are the server's own; Start adds the page's size and hash.
	Settings map[string]string
}

// Start starts the process, waits until it serves the page (stopping it
// if it does not) and describes the ready instance.
func Start(ctx context.Context, cfg server.Config, ln Launch) (*server.Instance, error) {
	proc.Logf(cfg.Log, "%s: starting %s on 127.0.0.1:%d in %s", ln.Name, ln.What, ln.Layout.Port, ln.Layout.Dir)
	h, err := server.Launch(ctx, cfg, ln.Name, ln.Spec, func(h *proc.Handle) error { return ln.ready(ctx, h) })
	if err != nil {
		return nil, err
	}
	return ln.instance(h), nil
}

// ready waits until the started process h serves the page, stopping it
// if it does not.
func (ln Launch) ready(ctx context.Context, h *proc.Handle) error {
	l := ln.Layout
	probe := func(ctx context.Context) error {
		if err := proc.Listening(h.PID, l.Port); err != nil {
			// A server whose workers hold the socket: the listening
			// process may be a child, so dial instead.
			c, derr := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)), time.Second)
			if derr != nil {
				return err
			}
			c.Close()
		}
		status, body, err := Get(ctx, l.URI())
		if err != nil {
			return err
		}
		if status != http.StatusOK || !bytes.Equal(body, l.Page) {
			return fmt.Errorf("GET %s: status %d, %d bytes (want 200 and the %d-byte page)", PagePath, status, len(body), len(l.Page))
		}
		return nil
	}
	if err := proc.WaitReady(ctx, h, startTimeout, probe); err != nil {
		proc.Abandon(h, ln.Signal, 5*time.Second)
		return err
	}
	return nil
}

// instance describes the ready server h; its settings get the page's
// size and hash.
func (ln Launch) instance(h *proc.Handle) *server.Instance {
	l, settings, sig := ln.Layout, ln.Settings, ln.Signal
	settings["version"] = ln.Version
	settings["port"] = strconv.Itoa(l.Port)
	settings["page"] = fmt.Sprintf("%s: %d bytes of generated HTML, sha256 %s", PagePath, len(l.Page), Hash(l.Page))
	settings["durability"] = "not applicable: a static page, nothing is written"
	return &server.Instance{
		Name: ln.Name, URI: l.URI(), PID: h.PID, DataDir: l.DataDir, LogPath: ln.Spec.LogPath, Version: ln.Version, Settings: settings,
		StopFunc: func(ctx context.Context) error { return proc.Stop(ctx, h, sig, server.DefaultStopTimeout) },
	}
}
