package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The clientInfo cache answers a value it holds with the value decoded the
// first time, keeps only small values without icons, never more than its
// bound, and never keeps what does not decode.
func TestClientInfoCache(t *testing.T) {
	var c clientInfoCache
	info := jsontext.Value(`{"name":"c","version":"1"}`)
	first, err := c.decode(info)
	require.NoError(t, err)
	assert.Equal(t, Implementation{Name: "c", Version: "1"}, *first)
	again, err := c.decode(jsontext.Value(string(info))) // other bytes, same value
	require.NoError(t, err)
	assert.Same(t, first, again, "held")

	for _, tc := range []struct {
		name string
		raw  string
	}{
		{"icons", `{"name":"c","version":"1","icons":[{"src":"https://x/i.png"}]}`},
		{"over the bytes bound", `{"name":"` + strings.Repeat("n", maxClientInfoBytes) + `","version":"1"}`},
	} {
		a, err := c.decode(jsontext.Value(tc.raw))
		require.NoError(t, err, tc.name)
		b, err := c.decode(jsontext.Value(tc.raw))
		require.NoError(t, err, tc.name)
		assert.NotSame(t, a, b, "%s: not held", tc.name)
		assert.Equal(t, *a, *b, tc.name)
	}

	_, err = c.decode(jsontext.Value(`{"name":5}`))
	require.Error(t, err)
	_, err = c.decode(jsontext.Value(`{"name":5}`))
	require.Error(t, err, "an error is not held")

	for i := range 3 * maxClientInfos {
		_, err := c.decode(jsontext.Value(fmt.Sprintf(`{"name":"c%d","version":"1"}`, i)))
		require.NoError(t, err)
		c.mu.RLock()
		n := len(c.m)
		c.mu.RUnlock()
		require.LessOrEqual(t, n, maxClientInfos, "bounded")
	}

	var none *clientInfoCache // no cache: every value decoded
	a, err := none.decode(info)
	require.NoError(t, err)
	b, err := none.decode(info)
	require.NoError(t, err)
	assert.NotSame(t, a, b)
	assert.Equal(t, *first, *a)
}
