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
