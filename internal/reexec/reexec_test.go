package reexec

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// helperName is the helper this test binary registers; helperCode is the
// status it exits with, one no other path of the test binary returns.
const (
	helperName = "reexec-test-helper"
	helperCode = 7
)

// helperRuns counts the in-process runs of the helper, to show that Main
// runs nothing in a process not started as a helper.
var helperRuns int

// helper says it ran, and whether Env reached it (it must not: Main
// removes it so that the helper's own children are not helpers too).
func helper() int {
	helperRuns++
	os.Stdout.WriteString("helper ran; " + Env + "=" + os.Getenv(Env) + "\n")
	return helperCode
}

// The test binary is also the helper process: started with Setting(name),
// it runs Main, as cmd/storebench's main does, and never its tests.
func TestMain(m *testing.M) {
	Register(helperName, helper)
	if code, ran := Main(); ran {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// start runs this test binary with extra environment entries and returns
// its stdout, stderr and exit status. It runs no test of its own (-test.run
// matches none), so a process that is not taken for a helper exits 0
// with "no tests to run".
func start(t *testing.T, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(withoutEnv(os.Environ()), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// withoutEnv drops Env from an environment, so that a test run inside a
// helper's environment still starts its children as it means to.
func withoutEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, Env+"=") {
			out = append(out, e)
		}
	}
	return out
}

// TestRegisteredHelperRuns starts the binary as the registered helper: its
// entry point runs, its status is the process's, and Env is gone from its
// environment.
func TestRegisteredHelperRuns(t *testing.T) {
	stdout, stderr, code := start(t, Setting(helperName))
	if code != helperCode {
		t.Fatalf("exit status %d, want the helper's %d; stdout %q, stderr %q", code, helperCode, stdout, stderr)
	}
	if want := "helper ran; " + Env + "=\n"; stdout != want {
		t.Errorf("stdout %q, want %q (the helper ran, without %s in its environment)", stdout, want, Env)
	}
}

// TestUnknownHelperIsAnError starts the binary as a helper no package
// registered: it exits 2, runs no helper and no test, and says which name
// is unknown and which are registered.
func TestUnknownHelperIsAnError(t *testing.T) {
	stdout, stderr, code := start(t, Setting("no-such-helper"))
	if code != 2 {
		t.Fatalf("exit status %d, want 2; stdout %q, stderr %q", code, stdout, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q: an unknown helper must run nothing", stdout)
	}
	for _, want := range []string{Env + `="no-such-helper"`, "names no helper process", "registered: " + helperName} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
}

// TestNothingRunsOtherwise checks that a process not started as a helper
// runs none: in this process (Env unset, or set empty) Main returns ran
// false without calling the helper, and a child started without Env runs
// its tests as usual.
func TestNothingRunsOtherwise(t *testing.T) {
	t.Setenv(Env, "") // restored when the test ends
	for _, how := range []string{"set empty", "unset"} {
		if how == "unset" {
			os.Unsetenv(Env)
		}
		before := helperRuns
		if code, ran := Main(); ran || code != 0 || helperRuns != before {
			t.Errorf("%s %s: Main() = %d, %v and the helper ran %d times, want 0, false and none", Env, how, code, ran, helperRuns-before)
		}
	}
	stdout, stderr, code := start(t)
	if code != 0 || strings.Contains(stdout, "helper ran") {
		t.Errorf("started without %s: exit status %d, stdout %q, stderr %q; want 0 and no helper", Env, code, stdout, stderr)
	}
}

// TestRegisterRefusesMistakes checks that an empty name, a nil main and a
// name registered twice panic at init rather than start the wrong process.
func TestRegisterRefusesMistakes(t *testing.T) {
	for _, c := range []struct {
		name string
		main func() int
	}{{"", helper}, {"nil-main", nil}, {helperName, helper}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, main nil: %v) did not panic", c.name, c.main == nil)
				}
			}()
			Register(c.name, c.main)
		}()
	}
	if _, ok := mains["nil-main"]; ok {
		t.Error("a nil main was registered")
	}
}
