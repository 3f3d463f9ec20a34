package metrics

import "testing"

// An address must name the interface it serves on.
func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9464": true, "[::1]:9464": true, "localhost:0": true, "10.0.0.7:9464": true,
		":9464": false, "0.0.0.0:9464": false, "[::]:9464": false, "127.0.0.1": false, "127.0.0.1:x": false, "": false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v", addr, err)
		}
	}
}
