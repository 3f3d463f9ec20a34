package targetkit

import (
	"strings"
	"testing"

	"storebench/internal/kv"
)

func TestServerOptions(t *testing.T) {
	known := []string{"pool"}
	sv, err := ServerOptions(kv.Async, map[string]string{"pool": "3"}, "redis://h:1/0", known, 16, "redis://host:port/db")
	if err != nil || sv.Sync || sv.Pool != 3 {
		t.Fatalf("%+v, %v", sv, err)
	}
	if sv, _ := ServerOptions(kv.Sync, nil, "x://h", known, 16, "x"); !sv.Sync || sv.Pool != 16 {
		t.Fatalf("defaults: %+v", sv)
	}
	for _, c := range []struct {
		extra map[string]string
		uri   string
		want  string
	}{
		{nil, "", "no URI given (redis://host:port/db)"},
		{map[string]string{"pool": "0"}, "u", "option pool: 0 connections: want 1..4096"},
		{map[string]string{"nope": "1"}, "u", "nope"},
	} {
		if _, err := ServerOptions(kv.Sync, c.extra, c.uri, known, 16, "redis://host:port/db"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: got %v, want %q", c.extra, c.uri, err, c.want)
		}
	}
}

func TestCopyFieldsOwnsItsBytes(t *testing.T) {
	src := [][]byte{[]byte("ab"), {}, []byte("cde")}
	out := CopyFields(src)
	src[0][0], src[2][0] = 'X', 'Y'
	if string(out[0]) != "ab" || len(out[1]) != 0 || string(out[2]) != "cde" {
		t.Fatalf("%q", out)
	}
	out[0] = append(out[0], 'z') // capacity is capped: no spill into the next field
	if string(out[2]) != "cde" {
		t.Fatalf("append spilled: %q", out)
	}
}
