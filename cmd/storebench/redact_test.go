package main

import (
	"context"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"storebench/internal/results"
	"storebench/internal/server/servertest"
	"storebench/internal/study"
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

// A password given in a URI's query (postgres://u@h/db?password=PW, which
// the driver takes like one in the user information) reaches the driver,
// so the run works, and no file of the run, nor the screen: not the
// command, the study as given or as run, the reports, the logs; nor the
// message of a target whose connection fails.
func TestQueryPasswordReachesNoFile(t *testing.T) {
	pw := "Qry-pw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	uri := queryPasswordURI(t, pw)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close() // nothing listens there now: this target fails at once
	u, _ := url.Parse(uri)
	u.Host = "127.0.0.1:" + closed
	bad := u.String()

	// Both in the study file (its text is kept with the run) and on the
	// command line.
	text := "name: query-password\nladder: [200]\nconcurrency: 2\ndurability: sync\n" +
		"targets: [\"" + uri + "\", \"" + bad + "\"]\n" +
		"workloads:\n  - name: ycsb\n    params: {workloads: [a], operations: 300, fields: 2, field_length: 20}\n"
	file := filepath.Join(t.TempDir(), "query-password.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "run", file, "--out", out, "--targets", uri+","+bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the target on the closed port fails)\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyDir(t, out)
	run, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The password reached the driver: the first target ran.
	if len(run.Targets) != 2 || run.Targets[0].Status != "ok" || run.Targets[1].Status != "failed" {
		t.Fatalf("targets: %+v", run.Targets)
	}
	if a := run.Targets[0].Find("ycsb", "a", 200); a == nil || a.Ops == 0 {
		t.Fatalf("ycsb a not measured on %s", run.Targets[0].Name)
	}
	// What names the URIs keeps them, masked.
	if cmd := strings.Join(run.Command, " "); strings.Count(cmd, "password=xxxxx") != 2 {
		t.Errorf("command %q does not keep the masked URIs", cmd)
	}
	if s := run.Targets[0].Server; s == nil || !strings.Contains(s.URI, "password=xxxxx") {
		t.Errorf("server %+v: want its masked URI", s)
	}
	if !strings.Contains(stderr, "127.0.0.1:"+closed) || !strings.Contains(stderr, "password=xxxxx") {
		t.Errorf("the failure does not name the server it tried, masked:\n%s", stderr)
	}
	// The study kept with the run is still the study: it parses.
	for _, f := range []string{"study.original.yaml", "study.yaml"} {
		s, err := study.Load(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if len(s.Targets) != 2 || !strings.Contains(s.Targets[1].URI, "password=xxxxx") {
			t.Errorf("%s: targets %+v", f, s.Targets)
		}
	}
	noSecretIn(t, dir, stdout+stderr, pw)
}

// queryPasswordURI returns the URI of a PostgreSQL database of this test,
// owned by a role of this test whose password is pw, given in the query.
// The role is made rather than the server's own password used, which may
// be a word that a run's files hold anyway (a shared server's
// storebench:storebench).
func queryPasswordURI(t *testing.T, pw string) string {
	t.Helper()
	admin := servertest.URI(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	name := "sb_redact_" + strconv.Itoa(os.Getpid())
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)",
		"DROP ROLE IF EXISTS " + name,
		"CREATE ROLE " + name + " LOGIN PASSWORD '" + pw + "'",
		"CREATE DATABASE " + name + " OWNER " + name,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Log(err)
			return
		}
		defer conn.Close(context.Background())
		for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + name} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Logf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.User(name), "/"+name
	q := u.Query()
	q.Set("sslmode", "disable")
	q.Set("password", pw)
	u.RawQuery = q.Encode()
	return u.String()
}

// noSecretIn fails the test if a file under dir, or screen, holds secret.
func noSecretIn(t *testing.T, dir, screen, secret string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("only %d files in the run directory", files)
	}
	if strings.Contains(screen, secret) {
		t.Errorf("the screen shows the password:\n%s", screen)
	}
}

// A command line refused before anything runs quotes what it refuses
// with its secrets masked: a target named twice, a host with a query.
func TestRefusedCommandPrintsNoPassword(t *testing.T) {
	const pw = "Refused-pw-7Hq2"
	uri := "postgres://u@127.0.0.1:1/db?sslmode=disable&password=" + pw
	for _, args := range [][]string{
		{"run", "ledger", "--targets", uri + "," + uri},
		{"run", "ledger", "--targets", "postgres://u:" + pw + "@127.0.0.1:1/db", "--workers", "2", "--hosts", "ssh://bench@127.0.0.1?password=" + pw},
		{"run", "ledger", "--seed", uri},
	} {
		stdout, stderr, code := runCLI(t, append(args, "--out", t.TempDir())...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr)
		}
		if strings.Contains(stdout+stderr, pw) {
			t.Errorf("%q: the screen shows the password:\n%s%s", args, stdout, stderr)
		}
		if !strings.Contains(stderr, "xxxxx") {
			t.Errorf("%q: the message does not show the masked URI:\n%s", args, stderr)
		}
	}
}
