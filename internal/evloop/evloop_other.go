//go:build !linux

package evloop

import (
	"context"
	"errors"
	"net"

	"storebench/internal/runner"
)

// Supported says whether this platform has the event loop: elsewhere
// callers keep their goroutine-per-connection path.
const Supported = false

var errUnsupported = errors.New("evloop: event loops are Linux only")

func Detach(net.Conn) (int, error) { return -1, errUnsupported }

func Close(int) error { return errUnsupported }

func Drive(context.Context, *runner.Loop, []Conn, Options) error { return errUnsupported }
