// Package maven installs a Java server's jar set from Maven Central for
// storebench's managed servers that ship as Maven artifacts (Cassandra,
// Kafka): a pom listing the artifacts, `mvn dependency:copy-dependencies`
// into a private directory, checked, marked complete and then moved into
// place, so that an interrupted install never looks installed. Java 17
// and Maven come from apt-get when missing.
package maven

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"storebench/internal/server/proc"
)

// CompleteMarker is written in the lib directory once every jar is
// there: a lib directory without it is an interrupted install.
const CompleteMarker = ".storebench-complete"

// JarSet is one server's jars.
type JarSet struct {
	// Name prefixes progress lines and errors ("kafka").
	Name string
	// What names the artifacts for the progress line
	// ("org.apache.kafka:kafka_2.13:4.1.0 and kafka-tools").
	What string
	// Dir is the install directory: it holds pom.xml and lib/.
	Dir string
	// POM is the pom.xml's text, versions filled in.
	POM string
	// MainJar is the file name of the server's own jar: an install
	// without it failed.
	MainJar string
	// Java returns nil when a Java runtime the server runs on is there.
	Java func() error
	// Installed returns nil when LibDir holds a complete, sound jar set.
	Installed func() error
	// Verify, if set, checks a freshly copied jar set (in dir) before it
	// is marked complete (a jar the server cannot start without).
	Verify func(dir string) error
}

// LibDir is where the jars go: <Dir>/lib.
func (j JarSet) LibDir() string { return filepath.Join(j.Dir, "lib") }

// Complete says whether lib holds a finished install (its marker).
func Complete(lib string) bool {
	_, err := os.Stat(filepath.Join(lib, CompleteMarker))
	return err == nil
}

// Install fetches the jar set into LibDir, installing Java 17 and Maven
// with apt-get first if they are missing. It is idempotent: a complete
// set is left as it is. Progress lines go to log.
func Install(ctx context.Context, log io.Writer, j JarSet) error {
	if log == nil {
		log = io.Discard
	}
	if j.Java == nil || j.Installed == nil || j.Dir == "" || j.MainJar == "" {
		return errors.New("maven: incomplete jar set description")
	}
	mvn, err := ensureTools(ctx, log, j)
	if err != nil {
		return err
	}
	lib := j.LibDir()
	if j.Installed() == nil {
		proc.Logf(log, "%s: already installed in %s", j.Name, lib)
		return nil
	}
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", j.Name, err)
	}
	pom := filepath.Join(j.Dir, "pom.xml")
	if err := os.WriteFile(pom, []byte(j.POM), 0o644); err != nil {
		return fmt.Errorf("%s: %w", j.Name, err)
	}
	// A directory of this process's own: two installs at once do not
	// mix their jars, and the last to finish wins whole.
	partial := filepath.Join(j.Dir, fmt.Sprintf("lib.partial-%d", os.Getpid()))
	if err := os.RemoveAll(partial); err != nil {
		return fmt.Errorf("%s: %w", j.Name, err)
	}
	defer os.RemoveAll(partial)
	proc.Logf(log, "%s: fetching %s and its dependencies from Maven Central into %s ...", j.Name, j.What, lib)
	cmd := exec.CommandContext(ctx, mvn, "-B", "-ntp", "-Dstyle.color=never", "-f", pom,
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+partial)
	cmd.Dir = j.Dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: mvn dependency:copy-dependencies (%s): %w", j.Name, pom, err)
	}
	if _, err := os.Stat(filepath.Join(partial, j.MainJar)); err != nil {
		return fmt.Errorf("%s: maven did not produce %s: %w", j.Name, j.MainJar, err)
	}
	if j.Verify != nil {
		if err := j.Verify(partial); err != nil {
			return fmt.Errorf("%s: %w", j.Name, err)
		}
	}
	jars, _ := filepath.Glob(filepath.Join(partial, "*.jar"))
	var size int64
	for _, f := range jars {
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	marker := fmt.Sprintf("%s: %d jars, %d bytes\n", j.What, len(jars), size)
	if err := os.WriteFile(filepath.Join(partial, CompleteMarker), []byte(marker), 0o644); err != nil {
		return fmt.Errorf("%s: %w", j.Name, err)
	}
	if err := os.RemoveAll(lib); err != nil {
		return fmt.Errorf("%s: removing incomplete %s: %w", j.Name, lib, err)
	}
	if err := os.Rename(partial, lib); err != nil {
		return fmt.Errorf("%s: %w", j.Name, err)
	}
	proc.Logf(log, "%s: installed %d jars (%.1f MiB) in %s", j.Name, len(jars), float64(size)/(1<<20), lib)
	return nil
}

// ensureTools installs, through apt, the Java runtime and (unless the jars
// are already in place, when it is not needed) Maven where they are
// missing, so that Install can go on to fetch the jars; it returns the
// path of mvn, empty when the jars are installed and mvn is absent.
func ensureTools(ctx context.Context, log io.Writer, j JarSet) (string, error) {
	var pkgs []string
	if err := j.Java(); err != nil {
		proc.Logf(log, "%s: %v", j.Name, err)
		pkgs = append(pkgs, "openjdk-17-jre-headless")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil && j.Installed() != nil {
		pkgs = append(pkgs, "maven")
	}
	if len(pkgs) > 0 {
		if err := proc.AptInstall(ctx, log, pkgs...); err != nil {
			return "", fmt.Errorf("%s: %w", j.Name, err)
		}
		if mvn == "" {
			if mvn, err = exec.LookPath("mvn"); err != nil && j.Installed() != nil {
				return "", fmt.Errorf("%s: mvn not found after installing maven: %w", j.Name, err)
			}
		}
	}
	if err := j.Java(); err != nil {
		return "", fmt.Errorf("%s: %w", j.Name, err)
	}
	return mvn, nil
}
