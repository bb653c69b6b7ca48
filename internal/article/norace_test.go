//go:build !race

package article

const raceEnabled = false
