package registry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/registry"
)

type tagTypo struct {
	Name string `json:"name" jsonschema:"minLenght=1"`
}
type tagFlagTypo struct {
	Name string `json:"name" jsonschema:"requird"`
}
type tagNestedTypo struct {
	Items []tagInner `json:"items"`
}
type tagInner struct {
	Count int `json:"count" jsonschema:"minimum=0,maximun=9"`
}
type tagValueless struct {
	Name string `json:"name" jsonschema:"description"`
}
type tagOutTypo struct {
	Words int `json:"words" jsonschema:"descripton=how many"`
}

// Every option invopop/jsonschema reads, written correctly, and the fields
// it does not read at all.
type tagAllValid struct {
	S  string   `json:"s" jsonschema:"title=S,description=a\\, b,minLength=1,maxLength=9,pattern=^a,format=email,readOnly=true,writeOnly=false,default=x,example=y,enum=x,enum=y,required"`
	N  float64  `json:"n" jsonschema:"minimum=0,maximum=9,exclusiveMinimum=-1,exclusiveMaximum=10,multipleOf=0.5,default=1,example=2,enum=1,enum=2"`
	A  []string `json:"a" jsonschema:"minItems=1,maxItems=3,uniqueItems=true,nullable"`
	B  bool     `json:"b" jsonschema:"default=true,type=boolean,anchor=b"`
	I  *int     `json:"i,omitempty" jsonschema:"oneof_type=integer;null"`
	X  string   `json:"-" jsonschema:"notAnOption"`
	Y  string   `json:"y" jsonschema:"-,notAnOption"`
	Ex string   `json:"ex" jsonschema_extras:"anything=goes"`
}

func TestRegisterRefusesUnknownSchemaTagOptions(t *testing.T) {
	tests := []struct {
		name     string
		register func(r *registry.Registry) error
		want     []string
	}{
		{"misspelt key", func(r *registry.Registry) error {
			return registry.Register(r, "t", "", func(context.Context, tagTypo) (string, error) { return "", nil }, nil)
		}, []string{"tagTypo.Name", `"minLenght=1"`}},
		{"misspelt flag", func(r *registry.Registry) error {
			return registry.Register(r, "t", "", func(context.Context, tagFlagTypo) (string, error) { return "", nil }, nil)
		}, []string{"tagFlagTypo.Name", `"requird"`}},
		{"nested in a slice element", func(r *registry.Registry) error {
			return registry.Register(r, "t", "", func(context.Context, tagNestedTypo) (string, error) { return "", nil }, nil)
		}, []string{"tagInner.Count", `"maximun=9"`}},
		{"key without a value", func(r *registry.Registry) error {
			return registry.Register(r, "t", "", func(context.Context, tagValueless) (string, error) { return "", nil }, nil)
		}, []string{"tagValueless.Name", `"description"`}},
		{"output type", func(r *registry.Registry) error {
			return registry.Register(r, "t", "", func(context.Context, struct{}) (tagOutTypo, error) { return tagOutTypo{}, nil }, nil)
		}, []string{"output type", "tagOutTypo.Words", `"descripton=how many"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := registry.New(nil)
			err := tt.register(r)
			requireRegistrationError(t, err, "t", "not one invopop/jsonschema understands")
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			_, ok := r.Lookup("t")
			assert.False(t, ok, "nothing registered")
		})
	}

	r := registry.New(nil)
	require.NoError(t, registry.Register(r, "valid", "", func(context.Context, tagAllValid) (string, error) { return "", nil }, nil))
	tool, ok := r.Lookup("valid")
	require.True(t, ok)
	assert.Contains(t, string(tool.Definition().InputSchema), `"description":"a, b"`)
}
