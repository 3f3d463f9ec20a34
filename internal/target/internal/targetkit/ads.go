package targetkit

import (
	"fmt"
	"sync"
)

// Stage makes one staged write of an authenticated tree's block (IAVL,
// MPT): write runs under mu, and only when it succeeds is the block
// marked dirty, so that readers go to the tree with the staged writes;
// its error is wrapped behind prefix ("iavl: set: ...").
func Stage(mu *sync.Mutex, dirty *bool, prefix string, write func() error) error {
	mu.Lock()
	defer mu.Unlock()
	if err := write(); err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	*dirty = true
	return nil
}

// Release closes *c, unless it is nil, and sets it to nil, so that a
// second Close of its owner closes nothing twice.
func Release[C interface {
	comparable
	Close() error
}](c *C) error {
	var zero C
	if *c == zero {
		return nil
	}
	err := (*c).Close()
	*c = zero
	return err
}

// FirstError is the first of errs that is not nil.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
