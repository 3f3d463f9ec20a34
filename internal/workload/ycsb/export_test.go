package ycsb

// Key is record i's key, for the tests of package ycsb_test.
func Key(dst []byte, i uint64) []byte { return key(dst, i) }
