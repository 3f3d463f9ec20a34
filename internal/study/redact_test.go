package study

import (
	"strings"
	"testing"

	"storebench/internal/redact"
)

// A Redis password written as the lone user information
// (redis://SECRET@host, an old Redis habit) never reaches the study a run
// stores: neither its text as given nor the study as run, both masked as
// the coordinator masks them (issue 33, 12).
func TestStoredStudyMasksALoneRedisPassword(t *testing.T) {
	const secret = "S3cretLone"
	src := "name: x\nladder: [10]\ntargets: [pebble, \"redis://" + secret + "@127.0.0.1:1/0\", {uri: 'rediss://" + secret + "@127.0.0.1:2/0'}]\n" +
		"workloads:\n  - name: ledger\n"
	s, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Override{Targets: str("pebble,redis://" + secret + "@127.0.0.1:1/0,redis-cluster://" + secret + "@127.0.0.1:7000")}); err != nil {
		t.Fatal(err)
	}
	effective, err := s.Effective(redact.Text)
	if err != nil {
		t.Fatal(err)
	}
	original := redact.Text(s.Source)
	stored := redact.Text(string(effective))
	for name, text := range map[string]string{"study.original.yaml": original, "study.yaml": stored} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the password:\n%s", name, text)
		}
	}
	if !strings.Contains(stored, "redis://xxxxx@127.0.0.1:1/0") || !strings.Contains(original, "redis://xxxxx@127.0.0.1:1/0") {
		t.Errorf("the URI is not shown masked:\n%s\n%s", original, stored)
	}
	// The study as stored still loads.
	if _, err := Parse("study.yaml", []byte(stored)); err != nil {
		t.Errorf("the stored study does not load: %v\n%s", err, stored)
	}
}

// As the redis and redis-cluster targets declare when they register (package target/servers's
// TestLoneUserSecretsAreDeclared checks that it does).
func init() { redact.AddLoneSecretSchemes("redis", "rediss", "redis-cluster") }
