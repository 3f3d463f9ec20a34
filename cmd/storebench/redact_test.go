package main

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"storebench/internal/results"
)

// A password in a target's URI, given on the command line or in the study
// file, reaches no file of the run (results.json, study.yaml, reports,
// logs, HDR logs, kept data) and neither the screen nor the report.
func TestTargetPasswordsReachNoFile(t *testing.T) {
	const pwCLI, pwFile = "Cli-pw-9x7Qz", "File-pw-4kJ2w"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close() // nothing listens there now: the URI targets fail at once

	study := strings.ReplaceAll(tinyStudy, "%DUR%", "300ms")
	study = strings.Replace(study, "targets: [pebble, bbolt]",
		"targets: [pebble, {uri: \"postgres://bench:"+pwFile+"@127.0.0.1:"+port+"/db\"}]", 1)
	file := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(file, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", file, "--out", out, "--keep-data",
		"--targets", "pebble,redis://:"+pwCLI+"@127.0.0.1:"+port+"/0")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the redis target fails)\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The run is what the test means: the URI target was tried and failed,
	// the password-carrying texts are stored, masked.
	if len(run.Targets) != 2 || run.Targets[1].Status != "failed" || run.Targets[0].Status != "ok" {
		t.Fatalf("targets: %+v", run.Targets)
	}
	if cmd := strings.Join(run.Command, " "); !strings.Contains(cmd, "redis://:xxxxx@127.0.0.1:"+port+"/0") {
		t.Errorf("command %q does not keep the masked URI", cmd)
	}
	if !strings.Contains(run.StudySource, "postgres://bench:xxxxx@127.0.0.1:"+port+"/db") {
		t.Errorf("study source does not keep the masked URI:\n%s", run.StudySource)
	}

	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, pw := range []string{pwCLI, pwFile} {
			if strings.Contains(string(b), pw) {
				t.Errorf("%s holds the password %s", path, pw)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("only %d files in the run directory", files)
	}
	for _, pw := range []string{pwCLI, pwFile} {
		if strings.Contains(stdout, pw) || strings.Contains(stderr, pw) {
			t.Errorf("the screen shows the password %s", pw)
		}
	}
}
