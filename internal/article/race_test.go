//go:build race

package article

// raceEnabled relaxes timing checks: the race detector slows code down
// several times over.
const raceEnabled = true
