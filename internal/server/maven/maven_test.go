package maven

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A small jar set (slf4j-api, one jar) through the real mvn: the
// install lands whole with its marker, a second is a no-op, and a set
// that fails its check leaves nothing that looks installed.
const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>storebench</groupId>
  <artifactId>maven-test</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
`

func set(dir string) JarSet {
	j := JarSet{Name: "slf4j", What: "org.slf4j:slf4j-api:1.7.36", Dir: dir, POM: pom, MainJar: "slf4j-api-1.7.36.jar",
		Java: func() error { _, err := exec.LookPath("java"); return err }}
	j.Installed = func() error {
		if !Complete(j.LibDir()) {
			return errors.New("not installed")
		}
		return nil
	}
	return j
}

func TestInstallJarSet(t *testing.T) {
	dir := t.TempDir()
	j := set(dir)
	var log bytes.Buffer
	if err := Install(context.Background(), &log, j); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !Complete(j.LibDir()) {
		t.Fatal("no complete marker")
	}
	if _, err := os.Stat(filepath.Join(j.LibDir(), "slf4j-api-1.7.36.jar")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "slf4j: fetching org.slf4j:slf4j-api:1.7.36") || !strings.Contains(log.String(), "slf4j: installed 1 jars") {
		t.Fatalf("progress lines:\n%s", log.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "lib.partial-*")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
	log.Reset()
	if err := Install(context.Background(), &log, j); err != nil || !strings.Contains(log.String(), "already installed") {
		t.Fatalf("second install: %v\n%s", err, log.String())
	}

	// A set whose check fails is not installed, and says why.
	bad := set(t.TempDir())
	bad.Verify = func(string) error { return errors.New("no jamm jar") }
	err := Install(context.Background(), nil, bad)
	if err == nil || !strings.Contains(err.Error(), "slf4j: no jamm jar") {
		t.Fatalf("failed check gave %v", err)
	}
	if Complete(bad.LibDir()) {
		t.Fatal("a set that failed its check looks installed")
	}
}
