//go:build race

package adstest

// raceEnabled skips timings, which mean nothing under the race detector.
const raceEnabled = true
