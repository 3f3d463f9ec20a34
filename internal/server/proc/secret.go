package proc

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Password returns a fresh random password for a managed server's
// account: 128 bits from crypto/rand, as 32 hex digits, so it needs no
// escaping in a URI, a config file or SQL. A fixed password would let
// any local user into every instance storebench ever started. Callers
// hand it to the server without writing it to a file (standard input, a
// hash, SQL over a private socket) and put it only in the URI, which is
// never printed in clear (redact.Text).
func Password() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating a password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
