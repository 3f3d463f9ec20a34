package cassandra

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"storebench/internal/home"
	"storebench/internal/server/maven"
)

// Version is the Cassandra release storebench installs and runs.
const Version = "4.1.7"

//go:embed pom.xml
var pomTemplate string

// Home is storebench's own directory (package home).
func Home() string { return home.Dir() }

// InstallDir is where this Cassandra version is installed:
// <Home>/cassandra/<Version>, holding pom.xml and lib/.
func InstallDir() string { return filepath.Join(Home(), "cassandra", Version) }

// LibDir holds the jars of cassandra-all and its runtime dependencies.
func LibDir() string { return filepath.Join(InstallDir(), "lib") }

// installed returns nil when the jars are complete.
func installed() error {
	lib := LibDir()
	if !maven.Complete(lib) {
		return fmt.Errorf("Cassandra %s is not installed (no complete jar set in %s): run `storebench server install cassandra` or scripts/install-cassandra.sh", Version, lib)
	}
	if _, err := jammJar(lib); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(lib, "cassandra-all-"+Version+".jar")); err != nil {
		return fmt.Errorf("Cassandra %s install in %s is damaged (%v): remove it and run `storebench server install cassandra`", Version, lib, err)
	}
	return nil
}

// jammJar finds the jamm jar, which must be loaded as a Java agent.
func jammJar(lib string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(lib, "jamm-*.jar"))
	if len(m) == 0 {
		return "", fmt.Errorf("no jamm jar in %s: remove it and run `storebench server install cassandra`", lib)
	}
	return m[0], nil
}

// javaPath returns a Java runtime Cassandra 4.1 runs on (11 or 17):
// $JAVA_HOME's, else Debian's OpenJDK 17, else `java` on PATH.
func javaPath() (string, int, error) {
	var seen []string
	for _, c := range maven.JavaCandidates() {
		if _, err := os.Stat(c); err != nil {
			continue
		}
		major, err := maven.JavaMajor(c)
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s (%v)", c, err))
			continue
		}
		if major == 11 || major == 17 {
			return c, major, nil
		}
		seen = append(seen, fmt.Sprintf("%s is Java %d", c, major))
	}
	if len(seen) == 0 {
		return "", 0, errors.New("no Java runtime found: Cassandra needs Java 17 (apt-get install -y openjdk-17-jre-headless, or `storebench server install cassandra`)")
	}
	return "", 0, fmt.Errorf("Cassandra %s needs Java 11 or 17, found: %s (apt-get install -y openjdk-17-jre-headless, or set JAVA_HOME)", Version, strings.Join(seen, "; "))
}

// Install fetches cassandra-all and its runtime dependencies from Maven
// Central into LibDir (installing Java 17 and Maven with apt-get first if
// they are missing). It is idempotent: a complete lib directory is left as
// it is. scripts/install-cassandra.sh runs this same function.
func Install(ctx context.Context, log io.Writer) error {
	return maven.Install(ctx, log, maven.JarSet{
		Name: "cassandra", What: "org.apache.cassandra:cassandra-all:" + Version,
		Dir: InstallDir(), POM: strings.ReplaceAll(pomTemplate, "@CASSANDRA_VERSION@", Version),
		MainJar: "cassandra-all-" + Version + ".jar",
		Java: func() error {
			_, _, err := javaPath()
			return err
		},
		Installed: installed,
		Verify: func(dir string) error {
			_, err := jammJar(dir)
			return err
		},
	})
}
