package registry_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Numbers past MaxNumberDigits or MaxNumberExponent are refused with
// INVALID_ARGUMENT naming the bound, not retryable, before the schema
// validator sees them (it panics on 1e999999999 and spends seconds on a
// million digits), whether or not the schema is in the fast pre-check's
// subset; numbers at the bounds pass to the schema as before.
func TestNumbersBoundedBeforeTheValidator(t *testing.T) {
	r := registry.New(nil)
	require.NoError(t, r.AddTool(rawTool("plain", `{"type":"object","properties":{"n":{"type":"number"}}}`), okHandler("ok"), nil))
	require.NoError(t, r.AddTool(rawTool("bounded", `{"type":"object","properties":{"n":{"type":"number","multipleOf":0.5,"maximum":1e300}}}`), okHandler("ok"), nil))
	require.NoError(t, r.AddTool(rawTool("any", `{"type":"object","properties":{"n":{"not":{"type":"string"}}}}`), okHandler("ok"), nil))
	digits := func(n int) string { return "1" + strings.Repeat("0", n-1) }
	tests := []struct {
		name, args, limit, path string
	}{
		{"huge exponent", `{"n":1e999999999}`, "maxNumberExponent", "/n"},
		{"huge negative exponent", `{"n":1E-999999999}`, "maxNumberExponent", "/n"},
		{"exponent just over", `{"n":1e1001}`, "maxNumberExponent", "/n"},
		{"exponent with zeros", `{"n":1e+0000001001}`, "maxNumberExponent", "/n"},
		{"million digits", `{"n":` + digits(1_000_000) + `}`, "maxNumberDigits", "/n"},
		{"digits just over", `{"n":` + digits(1001) + `}`, "maxNumberDigits", "/n"},
		{"fraction digits", `{"n":0.` + digits(1001) + `}`, "maxNumberDigits", "/n"},
		{"nested", `{"n":[1,{"m":` + digits(2000) + `}]}`, "maxNumberDigits", "/n/1/m"},
		{"long key", `{"n":{"` + strings.Repeat("k", 100_000) + `":1e9999}}`, "maxNumberExponent", logclip.Clip("/n/"+strings.Repeat("k", 100_000), registry.MaxNumberPathBytes)},
		{"undeclared member", `{"other":1e9999}`, "maxNumberExponent", "/other"},
		{"undeclared member, nested", `{"other":[{"x":` + digits(2000) + `}]}`, "maxNumberDigits", "/other/0/x"},
		{"at the bounds", `{"n":` + digits(1000) + `}`, "", ""},
		{"exponent at the bound", `{"n":1e-1000}`, "", ""},
		{"exponent with leading zeros", `{"n":1e0001000}`, "", ""},
		{"ordinary", `{"n":1.5e3}`, "", ""},
	}
	for _, tool := range []string{"plain", "bounded", "any"} {
		tl, _ := r.Lookup(tool)
		for _, tt := range tests {
			t.Run(tool+"/"+tt.name, func(t *testing.T) {
				start := time.Now()
				se := tl.ValidateArguments(json.RawMessage(tt.args))
				assert.Less(t, time.Since(start), time.Second, "linear in the input")
				if tt.limit == "" {
					if se != nil {
						assert.NotEqual(t, "maxNumberDigits", se.Details["limit"])
						assert.NotEqual(t, "maxNumberExponent", se.Details["limit"])
					}
					return
				}
				require.NotNil(t, se)
				assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
				assert.False(t, se.Retryable)
				assert.Equal(t, tt.limit, se.Details["limit"])
				assert.Equal(t, tt.path, se.Details["path"])
				assert.Contains(t, se.Message, tt.limit)
				assert.Less(t, len(se.Message), 200+registry.MaxNumberPathBytes, "the number is not echoed, the path is clipped")
			})
		}
	}
}
