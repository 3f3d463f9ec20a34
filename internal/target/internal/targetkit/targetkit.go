// Package targetkit holds the small helpers every storage target shares:
// durability and cache option handling, target-specific option parsing,
// the wording used in Settings and in Unavailable messages, and a batch
// buffer. Keeping them in one place makes the Settings that reports print
// comparable from one engine to the next.
package targetkit

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"storebench/internal/kv"
	"storebench/internal/target"
)

// DefaultCacheBytes is the cache size a target uses when Options.CacheBytes
// is 0. Every engine's own default differs (8 MiB for LevelDB and Pebble,
// 256 MiB for Badger, ...), so we pick one figure for all of them: a study
// that does not set a cache then still compares like with like.
const DefaultCacheBytes int64 = 64 << 20

// Setting values for the "durability" key every target reports.
const (
	SyncSetting  = "fsync per write batch"
	AsyncSetting = "no fsync (async)"
)

// IsSync validates the durability class and says whether writes must be
// fsynced. An unset class is an error rather than a silent default, so that
// a misconfigured study cannot compare a synced engine with an async one.
func IsSync(d kv.Durability) (bool, error) {
	switch d {
	case kv.Sync:
		return true, nil
	case kv.Async:
		return false, nil
	case "":
		return false, fmt.Errorf("durability not set (want %q or %q)", kv.Sync, kv.Async)
	default:
		return false, fmt.Errorf("unknown durability %q (want %q or %q)", d, kv.Sync, kv.Async)
	}
}

// DurabilitySetting is the "durability" Settings value.
func DurabilitySetting(sync bool) string {
	if sync {
		return SyncSetting
	}
	return AsyncSetting
}

// CacheBytes returns the cache size to use and its description for
// Settings, e.g. "64 MiB (default)".
func CacheBytes(o kv.Options) (int64, string, error) {
	switch {
	case o.CacheBytes < 0:
		return 0, "", fmt.Errorf("negative cache size %d", o.CacheBytes)
	case o.CacheBytes == 0:
		return DefaultCacheBytes, FormatBytes(DefaultCacheBytes) + " (default)", nil
	default:
		return o.CacheBytes, FormatBytes(o.CacheBytes), nil
	}
}

// FormatBytes prints n with the largest binary unit that divides it, so
// that round sizes read naturally ("64 MiB") and odd ones stay exact.
func FormatBytes(n int64) string {
	units := []string{"GiB", "MiB", "KiB"}
	for i, u := range units {
		size := int64(1) << (10 * (3 - i))
		if n >= size && n%size == 0 {
			return fmt.Sprintf("%d %s", n/size, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// PrepareDir creates the data directory if needed.
func PrepareDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("no data directory given")
	}
	return os.MkdirAll(dir, 0o755)
}

// Extra is a target's validated target-specific options.
type Extra map[string]string

// CheckExtra rejects option names the target does not know. The study
// loader already validates them, but a target opened directly (tests, a
// future caller) must not silently ignore a misspelt option either.
func CheckExtra(o kv.Options, known []string) (Extra, error) {
	var unknown []string
	for k := range o.Extra {
		found := false
		for _, n := range known {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown option(s) %s (known: %s)",
			strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return Extra(o.Extra), nil
}

// Bytes reads a size option: a plain byte count or a number with a binary
// suffix (K, KiB, M, MiB, G, GiB; case-insensitive).
func (e Extra) Bytes(name string, def int64) (int64, error) {
	s, ok := e[name]
	if !ok {
		return def, nil
	}
	n, err := ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("option %s: %w", name, err)
	}
	return n, nil
}

// Int reads an integer option.
func (e Extra) Int(name string, def int) (int, error) {
	s, ok := e[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("option %s: %w", name, err)
	}
	return n, nil
}

// Choice reads an option that must be one of choices.
func (e Extra) Choice(name, def string, choices ...string) (string, error) {
	s, ok := e[name]
	if !ok {
		return def, nil
	}
	s = strings.ToLower(strings.TrimSpace(s))
	for _, c := range choices {
		if s == c {
			return s, nil
		}
	}
	return "", fmt.Errorf("option %s: %q is not one of %s", name, s, strings.Join(choices, ", "))
}

// ParseBytes parses "4096", "64MiB", "64 MB" or "1g" (units are binary).
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
	} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// Unavailable builds the reason and fix for a cgo engine that was compiled
// out. tag is the build tag the engine needs ("" for none) and aptPkg the
// Debian package with its C library ("" when the binding bundles it).
func Unavailable(tag, aptPkg string) string {
	if !CgoEnabled {
		need := "gcc"
		if aptPkg != "" {
			need += " " + aptPkg
		}
		return fmt.Sprintf(`built with CGO_ENABLED=0: install %s with "apt-get install -y %s" and rebuild with "make build"`, need, need)
	}
	return fmt.Sprintf(`built without the %q build tag: install the C library with "apt-get install -y %s" and rebuild with "make build"`, tag, aptPkg)
}

// NotBuilt is the Version of an engine that is compiled out.
const NotBuilt = "n/a (not built in)"

// CopyBytes returns a fresh copy of b that is never nil, so that an empty
// stored value reads back as an empty, non-nil slice on every engine.
func CopyBytes(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// Embedded holds the checked options every embedded engine starts from.
type Embedded struct {
	Sync       bool
	CacheBytes int64
	// CacheDesc describes the cache for Settings ("64 MiB (default)").
	CacheDesc string
	Extra     Extra
}

// EmbeddedOptions checks an embedded engine's durability class, cache
// size and option names, in that order.
func EmbeddedOptions(o kv.Options, known []string) (Embedded, error) {
	sync, err := IsSync(o.Durability)
	if err != nil {
		return Embedded{}, err
	}
	cache, desc, err := CacheBytes(o)
	if err != nil {
		return Embedded{}, err
	}
	extra, err := CheckExtra(o, known)
	if err != nil {
		return Embedded{}, err
	}
	return Embedded{Sync: sync, CacheBytes: cache, CacheDesc: desc, Extra: extra}, nil
}

// Open opens a store with open and names the engine and directory in the
// error of a failed open ("leveldb: open /data: ...").
func Open[S kv.Store](name string, o kv.Options, open func(kv.Options) (S, error)) (kv.Store, error) {
	s, err := OpenIn(name, o.Dir, o, open)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenIn opens a store in dir with open(o), naming the engine and dir in
// the error of a failed open, for stores that are not a kv.Store (the
// ads.Store targets).
func OpenIn[O, S any](name, dir string, o O, open func(O) (S, error)) (S, error) {
	s, err := open(o)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("%s: open %s: %w", name, dir, err)
	}
	return s, nil
}

// TargetOptions checks an embedded target.Options (a store that is not a
// kv.Store, such as an ads.Store) as EmbeddedOptions does.
func TargetOptions(o target.Options, known []string) (Embedded, error) {
	return EmbeddedOptions(kv.Options{Dir: o.Dir, Durability: o.Durability, CacheBytes: o.CacheBytes, Extra: o.Extra}, known)
}

// LSM holds the checked options the LSM engines (LevelDB, RocksDB,
// goleveldb, Pebble) share, on top of Embedded's.
type LSM struct {
	Embedded
	// BloomBits is bloom_bits_per_key (default 10; 0: no filter).
	BloomBits int
	// Memtable is the memtable size, from the engine's own option name.
	Memtable int64
	// Compression is the compression option's value (default snappy).
	Compression string
}

// LSMOptions checks an LSM engine's options: Embedded's, then
// bloom_bits_per_key, the memtable size under memtableName (default
// memtableDef) and compression (one of compressions, default snappy), in
// that order; last it creates the data directory.
func LSMOptions(o kv.Options, known []string, memtableName string, memtableDef int64, compressions ...string) (LSM, error) {
	eo, err := EmbeddedOptions(o, known)
	if err != nil {
		return LSM{}, err
	}
	l := LSM{Embedded: eo}
	if l.BloomBits, err = eo.Extra.Int("bloom_bits_per_key", 10); err != nil {
		return LSM{}, err
	}
	if l.Memtable, err = eo.Extra.Bytes(memtableName, memtableDef); err != nil {
		return LSM{}, err
	}
	if l.Compression, err = eo.Extra.Choice("compression", "snappy", compressions...); err != nil {
		return LSM{}, err
	}
	if err := PrepareDir(o.Dir); err != nil {
		return LSM{}, err
	}
	return l, nil
}

// BloomDesc is the "bloom_filter" Settings value: "10 bits/key", or
// "none" when the filter is off.
func (l LSM) BloomDesc() string {
	if l.BloomBits > 0 {
		return fmt.Sprintf("%d bits/key", l.BloomBits)
	}
	return "none"
}

// Wrap is nil when err is, and otherwise err behind prefix
// ("leveldb: put: ...").
func Wrap(prefix string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return nil
}

// OpenServer opens a server target's client with open(o), naming the
// target and its URI (redacted) in the error of a failed open
// (target.OpenError).
func OpenServer[S any](name string, o target.Options, open func(target.Options) (S, error)) (S, error) {
	s, err := open(o)
	if err != nil {
		var zero S
		return zero, target.OpenError(name, o.URI, err)
	}
	return s, nil
}

// Closer adapts a target's Open to target.Info.Open: a failed open is a
// nil io.Closer and the error.
func Closer[S io.Closer](open func(target.Options) (S, error)) func(target.Options) (io.Closer, error) {
	return func(o target.Options) (io.Closer, error) {
		s, err := open(o)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
