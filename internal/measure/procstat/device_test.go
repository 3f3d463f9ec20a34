package procstat

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDeviceCountsWhatReachesTheDisk(t *testing.T) {
	dir := t.TempDir()
	before, err := DeviceOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Device == "" || before.WriteBytes <= 0 {
		t.Fatalf("device %+v", before)
	}
	// 8 MiB written and fsynced must show on the device (tmpfs has no
	// block device: TempDir must be on one for this test).
	f, err := os.Create(filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for i := 0; i < 8; i++ {
		f.Write(buf)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	after, err := DeviceOf(filepath.Join(dir, "not", "yet", "there"))
	if err != nil {
		t.Fatal(err)
	}
	if d := after.WriteBytes - before.WriteBytes; d < 8<<20 {
		t.Fatalf("device %s wrote %d bytes, want >= 8 MiB", after.Device, d)
	}
}
