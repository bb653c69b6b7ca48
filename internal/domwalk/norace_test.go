//go:build !race

package domwalk_test

const raceEnabled = false
