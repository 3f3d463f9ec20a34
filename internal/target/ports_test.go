package target

import (
	"strings"
	"testing"
)

// A target URI's ports are checked, every host of a multi-host URI
// included, and the message never quotes the URI (it may hold a password).
func TestCheckPorts(t *testing.T) {
	for uri, ok := range map[string]bool{
		"redis://127.0.0.1:6379/0":                         true,
		"redis://:p%40ss@127.0.0.1:6379":                   true,
		"postgres://u:secret@[::1]:5432/db":                true,
		"mongodb://h1:27017,h2:27018/db":                   true,
		"cassandra://h1,h2/ks":                             true,
		"redis://127.0.0.1:70000":                          false,
		"redis://127.0.0.1:0":                              false,
		"postgres://u:secret@[::1]:65536/db":               false,
		"mongodb://u:secret@h1:27017,h2:99999/db?x=1":      false,
		"mysql://u:secret@127.0.0.1:3306/db?timeout=70000": true,
	} {
		scheme, rest, _ := strings.Cut(uri, "://")
		err := checkPorts(scheme, rest)
		if (err == nil) != ok {
			t.Errorf("%s: %v", uri, err)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "1..65535")) {
			t.Errorf("%s: %v", uri, err)
		}
	}
}
