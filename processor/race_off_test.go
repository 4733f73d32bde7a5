//go:build !race

package processor

const raceEnabled = false
