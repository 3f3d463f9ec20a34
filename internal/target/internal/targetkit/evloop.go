package targetkit

import (
	"net"

	"storebench/internal/evloop"
)

// TakeDetached takes a session's connection (take) out of its client and
// onto an event loop (evloop.Detach), returning the socket's descriptor;
// either step's error is wrapped behind prefix ("redis: set: ...").
func TakeDetached(prefix string, take func() (net.Conn, error)) (int, error) {
	nc, err := take()
	if err != nil {
		return -1, Wrap(prefix, err)
	}
	fd, err := evloop.Detach(nc)
	if err != nil {
		return -1, Wrap(prefix, err)
	}
	return fd, nil
}
