//go:build !race

package adstest

const raceEnabled = false
