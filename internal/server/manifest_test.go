package server

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedManifestsParse(t *testing.T) {
	all, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Fatalf("only %d manifest lines embedded: %v", len(all), all)
	}
	for _, m := range all {
		if m.Install == InstallApt {
			p, err := Packages(m.Name)
			if err != nil || !slices.Equal(p, m.Apt) {
				t.Errorf("Packages(%s) = %v, %v; want %v", m.Name, p, err, m.Apt)
			}
		}
	}
}

func TestManifestLine(t *testing.T) {
	ms, err := parseManifest("redis", "# comment\n\nredis install=apt apt=redis-server,redis-tools extra=x1 test=shared testdb=9 # db 9\n")
	if err != nil {
		t.Fatal(err)
	}
	want := Manifest{Name: "redis", Dir: "redis", Install: "apt", Apt: []string{"redis-server", "redis-tools"}, Extra: []string{"x1"}, Test: "shared", TestDB: "9"}
	if len(ms) != 1 || ms[0].Name != want.Name || ms[0].Dir != want.Dir || ms[0].Install != want.Install ||
		!slices.Equal(ms[0].Apt, want.Apt) || !slices.Equal(ms[0].Extra, want.Extra) || ms[0].Test != want.Test || ms[0].TestDB != want.TestDB {
		t.Errorf("parsed %+v, want %+v", ms, want)
	}
}

// Each mistake a manifest line can hold is refused, naming the file and
// line.
func TestManifestLineErrors(t *testing.T) {
	for line, want := range map[string]string{
		"x install=apt test=shared":                          "no apt= packages",
		"x install=go apt=foo test=shared":                   "packages belong to an install=apt line",
		"x install=like:y extra=foo test=shared":             "packages belong to an install=apt line",
		"x install=yum test=shared":                          `install="yum"`,
		"x test=shared":                                      `install=""`,
		"x install=builtin":                                  `test=""`,
		"x install=builtin test=sometimes":                   `test="sometimes"`,
		"x install=builtin test=own testdb=9":                "testdb= names a database on the shared server",
		"x install=apt apt=Redis test=shared":                `"Redis" is not a Debian package name`,
		"x install=apt apt=redis,,tools test=shared":         `"" is not a Debian package name`,
		"x install=builtin test=shared colour=blue":          `unknown key "colour"`,
		"x install=builtin test=shared test=own":             "test given twice",
		"x install=builtin test=shared stray":                `"stray" is not key=value`,
		"install=builtin test=shared":                        "not a server's name",
		"x install=apt apt=redis-server test=shared apt=foo": "apt given twice",
	} {
		_, err := parseManifest("d", "# first line\n"+line+"\n")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "internal/server/d/manifest.txt:2:") {
			t.Errorf("%q: got %v, want an error at internal/server/d/manifest.txt:2 saying %q", line, err, want)
		}
	}
	if _, err := parseManifest("d", "# nothing\n"); err == nil || !strings.Contains(err.Error(), "no server in it") {
		t.Errorf("an empty manifest: %v", err)
	}
}

// The manifests as a whole: a name in two directories, a like: naming
// nothing or a server that is itself like another.
func TestManifestsAsAWhole(t *testing.T) {
	ok := "a install=apt apt=pkg-a test=shared\n"
	for files, want := range map[[2]string]string{
		{ok, "a install=builtin test=shared\n"}:                        "server a has a manifest line in both internal/server/one and internal/server/two",
		{ok, "b install=like:zz test=own\n"}:                           "install=like:zz names no server",
		{ok, "b install=like:a test=own\nc install=like:b test=own\n"}: "install=like:b, which installs like a itself",
	} {
		fsys := fstest.MapFS{"one/manifest.txt": {Data: []byte(files[0])}, "two/manifest.txt": {Data: []byte(files[1])}}
		if _, err := readManifests(fsys); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", files, err, want)
		}
	}
	fsys := fstest.MapFS{"one/manifest.txt": {Data: []byte(ok)}, "two/manifest.txt": {Data: []byte("b install=like:a test=own\n")}}
	all, err := readManifests(fsys)
	if err != nil || len(all) != 2 || all[1].Like() != "a" || all[0].Like() != "" {
		t.Errorf("readManifests = %+v, %v", all, err)
	}
}

func TestPackagesFollowLike(t *testing.T) {
	p, err := Packages("redis-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := Packages("redis"); !slices.Equal(p, r) {
		t.Errorf("redis-cluster installs %v, redis %v", p, r)
	}
	if _, err := Packages("kafka"); err == nil || !strings.Contains(err.Error(), "not installed with apt") {
		t.Errorf("Packages(kafka): %v", err)
	}
	if _, err := Packages("no-such-server"); err == nil || !strings.Contains(err.Error(), "no line in any internal/server/*/manifest.txt") {
		t.Errorf("Packages(no-such-server): %v", err)
	}
}
