package streamhttp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsJSONContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                 true,
		"application/json; charset=utf-8":  true,
		"Application/JSON":                 true,
		"application/json ; charset=UTF-8": true,
		"application/json; charset":        false, // a malformed parameter
		"application/jsonx":                false,
		"text/plain":                       false,
		"":                                 false,
	} {
		assert.Equal(t, want, isJSONContentType(ct), ct)
	}
}
