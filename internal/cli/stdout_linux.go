package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// protectStdout duplicates stdout for the protocol and redirects file
// descriptor 1 to stderr, so stray prints from C code land in the log.
func protectStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("dup stdout: %w", err)
	}
	if err := unix.Dup2(2, 1); err != nil {
		return nil, fmt.Errorf("redirect stdout: %w", err)
	}
	return os.NewFile(uintptr(fd), "protocol"), nil
}

// ignoreSIGPIPE makes a write to a closed stdout or stderr fail with
// EPIPE instead of killing the process (Go's default for descriptors 1
// and 2), until the returned function is called.
func ignoreSIGPIPE() func() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}
