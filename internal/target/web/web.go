// Package web is the storebench target for HTTP servers: the managed
// Apache httpd, nginx and Node.js (targets apache, nginx, node), which
// serve the page of package server/web, and any http:// or https:// URL
// (target http), whose page is whatever it serves, read once at open and
// stated in the report. The handle gives the http workload where to send
// its requests and the body every response must carry.
package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"storebench/internal/redact"
	sweb "storebench/internal/server/web"
	"storebench/internal/target"
)

// openTimeout bounds Open's GET.
const openTimeout = 5 * time.Second

var optionNames = []string{sweb.OptionPageBytes}

func init() {
	for _, s := range []struct{ name, title string }{{"apache", "Apache httpd"}, {"nginx", "nginx"}, {"node", "Node.js"}} {
		name := s.name
		target.Register(target.Info{
			Name: name, Title: s.title, Version: "storebench HTTP/1.1 client", OptionNames: optionNames, Server: name,
			Provides: target.Caps{target.HTTPEndpoint},
			Open:     func(o target.Options) (io.Closer, error) { return Open(name, o, true) },
		})
	}
	target.Register(target.Info{
		Name: "http", Title: "HTTP server", Version: "storebench HTTP/1.1 client", OptionNames: optionNames,
		Schemes: []string{"http", "https"}, Provides: target.Caps{target.HTTPEndpoint},
		Open: func(o target.Options) (io.Closer, error) { return Open("http", o, false) },
	})
}

// Site is an open HTTP target.
type Site struct {
	addr, host, path string
	tls              bool
	page             []byte
	settings         map[string]string
}

// Open checks that o.URI serves a page (status 200). generated says the
// expected page is storebench's (of page_bytes, for the managed servers
// or when the option is given); otherwise it is what the URL serves now.
func Open(name string, o target.Options, generated bool) (*Site, error) {
	s, err := open(o, generated)
	if err != nil {
		return nil, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

func open(o target.Options, generated bool) (*Site, error) {
	for k := range o.Extra {
		if k != sweb.OptionPageBytes {
			return nil, fmt.Errorf("unknown option %q (known: %s)", k, sweb.OptionPageBytes)
		}
	}
	u, err := url.Parse(o.URI)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http:// or https://", u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("credentials in the URL are not supported")
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("no host in the URL")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	path := u.RequestURI()
	s := &Site{addr: net.JoinHostPort(u.Hostname(), port), host: u.Host, path: path, tls: u.Scheme == "https"}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	status, body, err := sweb.Get(ctx, o.URI)
	if err != nil {
		return nil, target.NoAnswer(err, openTimeout)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET answered status %d (want 200)", status)
	}
	_, given := o.Extra[sweb.OptionPageBytes]
	source := "read from the URL once at open"
	if generated || given {
		n, err := sweb.PageBytes(o.Extra)
		if err != nil {
			return nil, err
		}
		s.page = sweb.Page(n)
		source = "storebench's generated page (page_bytes " + strconv.Itoa(n) + ")"
	} else {
		s.page = body
	}
	sum := sha256.Sum256(s.page)
	s.settings = map[string]string{
		"url":           redact.Text(o.URI),
		"client":        "storebench's own HTTP/1.1 client (raw over TCP; one connection per request unless keep_alive)",
		"expected_page": fmt.Sprintf("%d bytes, sha256 %s: %s", len(s.page), hex.EncodeToString(sum[:]), source),
	}
	return s, nil
}

var _ target.HTTPSite = (*Site)(nil)

// HTTPEndpoint is where requests go: the TCP address, the Host header,
// the request path and whether TLS is spoken (target.HTTPSite).
func (s *Site) HTTPEndpoint() (addr, host, path string, tls bool) {
	return s.addr, s.host, s.path, s.tls
}

// ExpectedPage is the body every response must carry.
func (s *Site) ExpectedPage() []byte { return s.page }

// Settings implements kv.Describer.
func (s *Site) Settings() map[string]string { return s.settings }

// Close has nothing to release: connections belong to the workload.
func (s *Site) Close() error { return nil }
