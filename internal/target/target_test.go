package target

import (
	"strings"
	"testing"
)

func TestPasswordsNeverShow(t *testing.T) {
	uri := "mysql://bench:p%40ss@127.0.0.1:3306/db"
	if got := RedactURI(uri); got != "mysql://bench:xxxxx@127.0.0.1:3306/db" {
		t.Fatalf("RedactURI = %q", got)
	}
	msg := Scrub(uri, "dial "+uri+" failed: Access denied for user 'bench' (using password p@ss) p%40ss")
	if strings.Contains(msg, "p@ss") || strings.Contains(msg, "p%40ss") {
		t.Fatalf("password left in %q", msg)
	}
	if !strings.Contains(msg, "mysql://bench:xxxxx@127.0.0.1:3306/db") {
		t.Fatalf("URI not redacted in %q", msg)
	}
	for _, u := range []string{"redis://127.0.0.1:6379/0", "postgres://u@h/db", "not a uri"} {
		if RedactURI(u) != u || Scrub(u, "x "+u) != "x "+u {
			t.Fatalf("%q changed without a password", u)
		}
	}
}

func TestLookupByNameSchemeAndServer(t *testing.T) {
	Register(Info{Name: "fake", Title: "Fake", Server: "fakeserver", Schemes: []string{"fake"}, Unavailable: "test only", Provides: Caps{KeyValue}})
	for _, ref := range []string{"fake", "fake://h:1/x", "fakeserver"} {
		if i, err := Lookup(ref); err != nil || i.Name != "fake" || i.Embedded() {
			t.Fatalf("Lookup(%q) = %+v, %v", ref, i, err)
		}
	}
	if _, err := Lookup("nope://x"); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}

// Every URI of a command line or a study text loses its password, and
// only its password, also when the password holds characters that end
// other parts of a URI.
func TestRedactTextAndCommand(t *testing.T) {
	cases := map[string]string{
		"--targets=pebble,redis://:s3cret@127.0.0.1:6379/0,postgres://u:p%40w@h/db": "--targets=pebble,redis://:xxxxx@127.0.0.1:6379/0,postgres://u:xxxxx@h/db",
		"redis://:p@ss#w?rd,x@h:1/0":                   "redis://:xxxxx@h:1/0",
		"mongodb://u:pw@h/db?authSource=a@b":           "mongodb://u:xxxxx@h/db?authSource=a@b",
		"targets:\n  - uri: \"mysql://bench:pw@h/db\"": "targets:\n  - uri: \"mysql://bench:xxxxx@h/db\"",
		"  - {uri: 'redis://a:b@h/0'} # me@x":          "  - {uri: 'redis://a:xxxxx@h/0'} # me@x",
		"redis://h:6379/0 and postgres://u@h/db":       "redis://h:6379/0 and postgres://u@h/db",
	}
	for in, want := range cases {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n = %q\nwant %q", in, got, want)
		}
	}
	cmd := []string{"storebench", "run", "ledger", "--targets", "redis://:Pw-1@h:1/0", "--ladder=10"}
	got := RedactCommand(cmd)
	if strings.Join(got, " ") != "storebench run ledger --targets redis://:xxxxx@h:1/0 --ladder=10" {
		t.Errorf("RedactCommand = %q", got)
	}
	if cmd[4] != "redis://:Pw-1@h:1/0" {
		t.Errorf("RedactCommand changed its argument")
	}
}
