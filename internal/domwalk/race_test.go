//go:build race

package domwalk_test

// raceEnabled relaxes timing checks: the race detector slows code down
// several times over.
const raceEnabled = true
