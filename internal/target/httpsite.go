package target

// HTTPSite is what an HTTP target's handle offers (package target/web),
// the engine primitive behind the capability HTTPEndpoint: where requests
// go and the page every response must carry. The http workload drives it
// with its own clients.
type HTTPSite interface {
	// HTTPEndpoint is the TCP address to dial, the Host header, the
	// request path and whether to speak TLS.
	HTTPEndpoint() (addr, host, path string, tls bool)
	// ExpectedPage is the body every response must carry.
	ExpectedPage() []byte
}
