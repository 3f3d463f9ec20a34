// Package gotsc stands in for github.com/dterei/gotsc, which MoeingADS
// v0.4.3 calls from two package init functions to calibrate cycle-counter
// timers whose uses are all commented out. The calibration executes RDTSC
// 200,000 times; where the hypervisor traps RDTSC (as on storebench's
// reference machine) that costs ~3.5 s at every start of a binary built
// with the "moeingads" tag, every worker process included. This stand-in
// keeps the API and measures with the monotonic clock instead.
//
// It is wired in with a replace directive in storebench's go.mod.
package gotsc

import "time"

var start = time.Now()

// BenchStart returns a monotonic timestamp in nanoseconds (the original
// returns CPU cycles).
func BenchStart() uint64 { return uint64(time.Since(start)) }

// BenchEnd is BenchStart; the original differs in instruction ordering.
func BenchEnd() uint64 { return uint64(time.Since(start)) }

// TSCOverhead is 0: the monotonic clock's own cost is not subtracted.
func TSCOverhead() uint64 { return 0 }
