package mcp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A connection's done channel, made on first use, is closed when the
// connection is, whether it was made before the close or after.
func TestConnDoneChan(t *testing.T) {
	before := newConn(nil, 0, nil)
	early := before.doneChan()
	assert.True(t, early == before.doneChan(), "made once")
	before.close()
	before.close()
	select {
	case <-early:
	default:
		t.Fatal("made before the close: not closed")
	}

	after := newConn(nil, 0, nil)
	after.close()
	select {
	case <-after.doneChan():
	default:
		t.Fatal("made after the close: not closed")
	}
}
