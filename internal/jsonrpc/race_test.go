//go:build race

package jsonrpc

// raceEnabled: the race detector makes sync.Pool drop items, so allocation
// counts are not meaningful.
const raceEnabled = true
