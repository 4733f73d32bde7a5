//go:build !race

package ha

const raceEnabled = false
