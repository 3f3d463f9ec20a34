package targetkit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// SyncFiles fsyncs every file in dir whose name ends in suffix, then dir
// itself. The LevelDB family writes each record to its journal (*.log)
// before returning but fsyncs only on a sync write; fsyncing the journals
// through a fresh descriptor flushes those writes, including ones in a
// journal the engine has just rotated away from. A file removed meanwhile
// is skipped: the engine removes a journal only once its contents are in
// a synced table.
func SyncFiles(dir, suffix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		if err := fsync(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return fsync(dir)
}

func fsync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
