package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storebench/internal/redact"
)

// A Redis password written as the lone user information
// (redis://SECRET@host) reaches results.json, and the reports made from
// it, masked wherever the run holds it: the command, the study's text, a
// target's server, settings and reason (issue 33, 12).
func TestWriteMasksALoneRedisPassword(t *testing.T) {
	const secret = "S3cretLone"
	uri := "redis://" + secret + "@127.0.0.1:1/0"
	r := &Run{
		Study: "x", StudySource: "targets: [" + uri + "]\n",
		Command: []string{"storebench", "run", "x", "--targets", "pebble," + uri},
		Targets: []*Target{{
			Name: uri, Settings: map[string]string{"server": uri}, Status: "failed",
			Reason: "redis at " + uri + ": dial tcp 127.0.0.1:1: connect: connection refused",
			Server: &Server{Name: "redis", URI: uri},
		}},
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := r.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Fatalf("results.json holds the password:\n%s", b)
	}
	if !strings.Contains(string(b), "redis://xxxxx@127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused") {
		t.Errorf("the reason is not kept readable:\n%s", b)
	}
}

// As the redis target declares when it registers (package target/servers's
// TestLoneUserSecretsAreDeclared checks that it does).
func init() { redact.AddLoneSecretSchemes("redis", "rediss") }
