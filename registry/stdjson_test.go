package registry_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/stdjsontest"
	"github.com/keelmcp/keel/registry"
)

// stdJSONTypes holds the zero value of every exported type of the package
// with a JSON form; TestStandardJSONCoversEveryType keeps it complete.
var stdJSONTypes = []any{
	registry.Violation{},
}

// TestStandardJSONTypes encodes every exported type, as its zero value and
// with every field set, with encoding/json and with keel's codec, and
// requires the same bytes and the same decoded values.
func TestStandardJSONTypes(t *testing.T) {
	for _, zero := range stdJSONTypes {
		name := reflect.TypeOf(zero).Name()
		t.Run(name+"/zero", func(t *testing.T) { stdjsontest.Check(t, zero) })
		t.Run(name+"/filled", func(t *testing.T) {
			stdjsontest.Check(t, stdjsontest.FilledValue(reflect.TypeOf(zero), nil))
		})
	}
}

// TestStandardJSONCoversEveryType requires stdJSONTypes to list every
// exported type of the package that has a JSON form.
func TestStandardJSONCoversEveryType(t *testing.T) {
	var listed []string
	for _, v := range stdJSONTypes {
		listed = append(listed, reflect.TypeOf(v).Name())
	}
	sort.Strings(listed)
	require.Equal(t, stdjsontest.WireTypes(t, "."), listed)
}
