package proc

import (
	"path/filepath"
	"testing"
)

func TestSbin(t *testing.T) {
	p, err := Sbin("sh")
	if err != nil || !filepath.IsAbs(p) {
		t.Errorf("Sbin(sh) = %q, %v", p, err)
	}
	if p, err := Sbin("storebench-no-such-program"); err == nil {
		t.Errorf("Sbin found %q", p)
	}
}
