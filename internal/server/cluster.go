package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"storebench/internal/server/proc"
)

// A cluster instance (cassandra-cluster, redis-cluster) is several server
// processes on loopback addresses, one per node; Instance.PID is the
// first node's, and Instance.Nodes lists them all so that resources are
// measured per node and fault actions reach one node by its index.

// Node is one process of a cluster instance.
type Node struct {
	// Name is how reports call it ("node2 127.0.0.2:9042").
	Name string
	// Addr is its address (host:port) as clients reach it.
	Addr string
	// DataDir holds its data: disk is measured here.
	DataDir string
	// Role says what it is in the cluster when that matters (Redis
	// Cluster: primary or replica); may be empty.
	Role string
	// BeforeStop, when set, runs before the node is sent its stop
	// signal, and waits out a state in which the server would ignore it
	// (Redis writing its first AOF after a full resync refuses SIGTERM,
	// and is then killed when the stop times out). It must return by
	// its context's deadline.
	BeforeStop func(ctx context.Context)

	h *proc.Handle
	// pid is a node of a recorded instance (LoadState): no handle, only
	// its PID if it was alive when loaded.
	pid int
	// start (re)starts the node's process and returns once it answers
	// and has rejoined the cluster.
	start func(ctx context.Context) (*proc.Handle, error)
	// stopSignal is its clean-shutdown signal.
	stopSignal syscall.Signal
}

// NewNode wraps a started node process. start restarts it (the same
// configuration and data) and waits until it is back in the cluster.
func NewNode(name, addr, dataDir string, h *proc.Handle, stopSignal syscall.Signal, start func(ctx context.Context) (*proc.Handle, error)) *Node {
	return &Node{Name: name, Addr: addr, DataDir: dataDir, h: h, start: start, stopSignal: stopSignal}
}

// PID is the node's current process (0 when it is down).
func (n *Node) PID() int {
	if n.h == nil {
		return n.pid
	}
	if n.h.Exited() {
		return 0
	}
	return n.h.PID
}

// Handle is the node's current process handle (nil before it started).
func (n *Node) Handle() *proc.Handle { return n.h }

// Stop shuts the node down cleanly (killed after timeout).
func (n *Node) Stop(ctx context.Context, timeout time.Duration) error {
	if n.h == nil {
		return nil
	}
	n.beforeStop(ctx)
	if err := proc.Stop(ctx, n.h, n.stopSignal, timeout); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// beforeStop runs BeforeStop for at most 15 s, on a node that runs.
func (n *Node) beforeStop(ctx context.Context) {
	if n.BeforeStop == nil || n.PID() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	n.BeforeStop(ctx)
}

// Kill sends SIGKILL to the node's process group: a crash, no shutdown.
func (n *Node) Kill() error {
	if n.PID() == 0 || n.h == nil {
		return fmt.Errorf("%s is not running (or not ours to kill)", n.Name)
	}
	if err := syscall.Kill(-n.h.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", n.Name, n.h.PID, err)
	}
	select {
	case <-n.h.Done():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL for 10s", n.Name, n.h.PID)
	}
}

// Pause stops the node's process group (SIGSTOP): it holds its sockets
// open and answers nothing, like a node in a long GC pause or a network
// partition.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig syscall.Signal) error {
	if n.PID() == 0 || n.h == nil {
		return fmt.Errorf("%s is not running (or not ours to signal)", n.Name)
	}
	if err := syscall.Kill(-n.h.PID, sig); err != nil {
		return fmt.Errorf("signalling %s (pid %d): %w", n.Name, n.h.PID, err)
	}
	return nil
}

// Restart starts the node again if it is down, or stops it cleanly and
// starts it again if it runs; it returns once the node is back in the
// cluster.
func (n *Node) Restart(ctx context.Context) error {
	if n.start == nil {
		return errors.New(n.Name + " cannot be restarted")
	}
	if n.PID() != 0 {
		_ = n.signal(syscall.SIGCONT) // a paused node cannot stop
		n.beforeStop(ctx)
		if err := proc.Stop(ctx, n.h, n.stopSignal, DefaultStopTimeout); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	h, err := n.start(ctx)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", n.Name, err)
	}
	n.h = h
	return nil
}

// StopNodes stops every node at once (each cleanly, killed after the
// timeout) and returns the first error. Paused nodes are continued first.
func StopNodes(ctx context.Context, nodes []*Node, timeout time.Duration) error {
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() {
			if n.PID() != 0 {
				_ = n.signal(syscall.SIGCONT)
			}
			errs <- n.Stop(ctx, timeout)
		}()
	}
	var first error
	for range nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NodeAddr is the loopback alias of a local cluster's node i (from 1),
// 127.0.0.i, the way Cassandra's ccm places its nodes.
func NodeAddr(i int) string { return "127.0.0." + strconv.Itoa(i) }

// FreePortOnNodes finds a port free on every one of 127.0.0.1..n, other
// than those in avoid: the nodes of a local cluster share their port
// numbers and differ by address.
func FreePortOnNodes(n int, avoid ...int) (int, error) {
	for attempt := 0; attempt < 50; attempt++ {
		p, err := proc.FreePort()
		if err != nil {
			return 0, err
		}
		ok := true
		for _, a := range avoid {
			ok = ok && p != a
		}
		for i := 2; ok && i <= n; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(NodeAddr(i), strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no port free on all of 127.0.0.1..127.0.0.%d", n)
}
