// Package all registers every storage target: import it for its side
// effect. Engines that need cgo or a build tag register themselves as
// unavailable (with the reason and the fix) when compiled out, so every
// name is always known to `storebench list`.
package all

import (
	_ "storebench/internal/target/badger"
	_ "storebench/internal/target/bbolt"
	_ "storebench/internal/target/goleveldb"
	_ "storebench/internal/target/iavl"
	_ "storebench/internal/target/leveldb"
	_ "storebench/internal/target/lmdb"
	_ "storebench/internal/target/moeingads"
	_ "storebench/internal/target/mpt"
	_ "storebench/internal/target/pebble"
	_ "storebench/internal/target/rocksdb"
	_ "storebench/internal/target/sqlite"
)
