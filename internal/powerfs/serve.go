package powerfs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ServeEnv, set in a process's environment (a JSON config), makes this
// binary the server of one mount instead of whatever it was: Mount
// starts os.Executable() with it, the storebench binary and a test
// binary alike.
const ServeEnv = "STOREBENCH_POWERFS_SERVE"

func init() {
	raw := os.Getenv(ServeEnv)
	if raw == "" {
		return
	}
	if err := serve(raw); err != nil {
		fmt.Fprintln(os.Stderr, "powerfs:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve mounts and serves until unmounted or told to stop (SIGTERM,
// SIGINT: it unmounts first).
func serve(raw string) error {
	var cfg config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fmt.Errorf("%s: %w", ServeEnv, err)
	}
	os.Unsetenv(ServeEnv)
	fsys, err := NewFS(cfg.Root, cfg.Model)
	if err != nil {
		return err
	}
	root, err := fsys.Root()
	if err != nil {
		return err
	}
	ctlFile := os.NewFile(3, "powerfs-ctl")
	ctl, err := net.FileConn(ctlFile)
	ctlFile.Close()
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer ctl.Close()
	// Attributes and entries are the backing directory's at once: every
	// write lands there, so the kernel may cache them briefly.
	sec := time.Second
	srv, err := gofs.Mount(cfg.Dir, root, &gofs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec,
		MountOptions: fuse.MountOptions{AllowOther: true, FsName: "storebench-powerfs", Name: "powerfs",
			DirectMount: true, DirectMountStrict: false, MaxWrite: 1 << 20},
	})
	if err != nil {
		return fmt.Errorf("mounting %s: %w", cfg.Dir, err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		if err := srv.Unmount(); err != nil {
			_ = Unmount(cfg.Dir)
		}
	}()
	go control(ctl, fsys)
	srv.Wait()
	return nil
}

// control answers one connection's commands: "fail" (the power failure:
// what it dropped) and "stats".
func control(c net.Conn, fsys *FS) {
	defer c.Close()
	r := bufio.NewScanner(c)
	for r.Scan() {
		var res any
		var err error
		switch strings.TrimSpace(r.Text()) {
		case "fail":
			res, err = fsys.Fail()
		case "stats":
			res = fsys.Stats()
		default:
			err = fmt.Errorf("unknown command %q", r.Text())
		}
		a := answer{}
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Result, _ = json.Marshal(res)
		}
		b, _ := json.Marshal(a)
		if _, err := c.Write(append(b, '\n')); err != nil {
			return
		}
	}
}
