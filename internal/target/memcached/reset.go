package memcached

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"storebench/internal/target"
	"storebench/internal/target/conn"
)

// Reset drops every item (flush_all) of a server storebench started, for
// a fresh ladder step; on a server named by URI only storebench's own
// keys (see deleteOwn), never the rest.
func (s *Store) Reset(ctx context.Context) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	if s.external {
		return s.deleteOwn(ctx)
	}
	return s.c.FlushAll()
}

// Cleanup implements target.Cleaner: storebench's own keys, at the end
// of a run on a server named by URI.
func (s *Store) Cleanup(ctx context.Context) error { return s.deleteOwn(ctx) }

// ycsbKeyLen is the length of a YCSB record's key: "user" + 20 digits.
const ycsbKeyLen = 4 + 20

// isOwn reports whether key is one storebench writes on memcached: under
// a workload's prefix (conn.OwnKeyPrefixes) or a YCSB record's key.
func isOwn(key string, prefixes []string) bool {
	if conn.IsOwnKey(key, prefixes) {
		return true
	}
	if len(key) != ycsbKeyLen || !strings.HasPrefix(key, "user") {
		return false
	}
	for _, c := range key[4:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ownNames says what isOwn takes for storebench's keys.
func ownNames() []string { return append(conn.OwnKeyPrefixes(), "user<20 digits>") }

// Occupancy implements target.Occupant: the items the server holds
// (stats curr_items), and those of them under storebench's own keys
// (lru_crawler metadump all, which lists every key).
func (s *Store) Occupancy(ctx context.Context) (target.Occupancy, error) {
	o := target.Occupancy{Unit: "items", OwnNames: ownNames()}
	n, err := s.currItems(ctx)
	if err != nil {
		return o, err
	}
	if n == 0 {
		return o, nil
	}
	own, err := s.ownKeys(ctx)
	if err != nil {
		return o, err
	}
	o.Own = int64(len(own))
	o.Foreign = max(n-o.Own, 0)
	return o, nil
}

// cleanupPasses bounds the listings deleteOwn makes: a listing can miss
// items (below), so it lists again until one finds none of its keys.
const cleanupPasses = 10

// deleteOwn deletes storebench's own keys, found by listing every key
// (lru_crawler metadump all): memcached has no delete by prefix, and
// flush_all would drop the items of others. The crawler walks the LRU
// lists while the server's maintainer thread moves items between their
// segments (hot, warm, cold), and an item moved behind the crawler is
// not listed: one listing can leave a key (make bench-native found one
// left on the next run's check). So it lists and deletes again until a
// listing finds none, at most cleanupPasses times, and fails if keys
// remain then.
func (s *Store) deleteOwn(ctx context.Context) error {
	for pass := 0; pass < cleanupPasses; pass++ {
		keys, err := s.ownKeys(ctx)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.c.Delete(k); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
				return fmt.Errorf("memcached: delete %q: %w", k, err)
			}
		}
	}
	keys, err := s.ownKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return fmt.Errorf("memcached: %d of storebench's keys still listed after %d rounds of listing and deleting them", len(keys), cleanupPasses)
	}
	return nil
}

// dialText opens a plain text-protocol connection for stats and metadump.
func (s *Store) dialText(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, nil, err
	}
	dl := time.Now().Add(5 * time.Minute)
	if t, ok := ctx.Deadline(); ok && t.Before(dl) {
		dl = t
	}
	_ = c.SetDeadline(dl)
	return c, bufio.NewReaderSize(c, 1<<16), nil
}

// currItems is stats' curr_items.
func (s *Store) currItems(ctx context.Context) (int64, error) {
	c, r, err := s.dialText(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		return 0, err
	}
	n := int64(-1)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "END" {
			break
		}
		if v, ok := strings.CutPrefix(line, "STAT curr_items "); ok {
			if n, err = strconv.ParseInt(v, 10, 64); err != nil {
				return 0, fmt.Errorf("memcached: stats curr_items %q", v)
			}
		}
	}
	if n < 0 {
		return 0, errors.New("memcached: stats has no curr_items")
	}
	return n, nil
}

// ownKeys lists the server's keys (lru_crawler metadump all) and keeps
// storebench's own.
func (s *Store) ownKeys(ctx context.Context) ([]string, error) {
	c, r, err := s.dialText(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write([]byte("lru_crawler metadump all\r\n")); err != nil {
		return nil, err
	}
	prefixes := conn.OwnKeyPrefixes()
	var own []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("memcached: lru_crawler metadump: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "END":
			return own, nil
		case strings.HasPrefix(line, "BUSY"), strings.HasPrefix(line, "ERROR"), strings.HasPrefix(line, "CLIENT_ERROR"), strings.HasPrefix(line, "SERVER_ERROR"):
			return nil, fmt.Errorf("memcached: lru_crawler metadump all: %s (storebench lists the keys to delete only its own)", line)
		}
		f, _, _ := strings.Cut(line, " ")
		enc, ok := strings.CutPrefix(f, "key=")
		if !ok {
			continue
		}
		k, err := url.QueryUnescape(enc)
		if err != nil {
			return nil, fmt.Errorf("memcached: metadump key %q: %w", enc, err)
		}
		if isOwn(k, prefixes) {
			own = append(own, k)
		}
	}
}
