package maven

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"storebench/internal/server/proc"
)

// JavaCandidates are the Java runtimes a Java server may run on, in the
// order to try them: $JAVA_HOME's, Debian's OpenJDK 17, `java` on PATH.
func JavaCandidates() []string {
	var cands []string
	if h := os.Getenv("JAVA_HOME"); h != "" {
		cands = append(cands, filepath.Join(h, "bin", "java"))
	}
	m, _ := filepath.Glob("/usr/lib/jvm/java-17-openjdk-*/bin/java")
	cands = append(cands, m...)
	if p, err := exec.LookPath("java"); err == nil {
		cands = append(cands, p)
	}
	return cands
}

var javaVersionRE = regexp.MustCompile(`version "(1\.)?(\d+)`)

// JavaMajor is the major version of the Java runtime java (17), from
// its -version.
func JavaMajor(java string) (int, error) {
	out, err := exec.Command(java, "-version").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s -version: %v", java, err)
	}
	m := javaVersionRE.FindStringSubmatch(string(out))
	if m == nil {
		return 0, fmt.Errorf("%s -version: unexpected output %q", java, proc.FirstLine(string(out)))
	}
	return strconv.Atoi(m[2])
}
