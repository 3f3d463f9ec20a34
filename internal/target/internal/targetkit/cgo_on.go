//go:build cgo

package targetkit

// CgoEnabled says whether this binary was built with cgo.
const CgoEnabled = true
