package registry_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

type briefArgs struct {
	Topic    string  `json:"topic" jsonschema:"title=Topic,description=What to write about\\, briefly"`
	Tone     *string `json:"tone" jsonschema:"description=formal or casual"`
	Audience string  `json:"audience,omitempty"`
	Length   string  `json:"length,omitzero"`
	Plain    string  // no tag: named like the field, required
	Skipped  string  `json:"-"`
	hidden   string  //nolint:unused // unexported: not an argument
}

func TestRegisterPromptDerivesArguments(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	var got briefArgs
	require.NoError(t, registry.RegisterPrompt(r, "brief", "Writes a brief.", func(_ context.Context, a briefArgs) (*mcp.GetPromptResult, error) {
		got = a
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text("about " + a.Topic))}}, nil
	}, &registry.PromptOptions{Title: "Brief", Meta: mcp.Meta{"example.com/k": 1}}))

	prompts, err := r.ListPrompts(ctx)
	require.NoError(t, err)
	require.Len(t, prompts, 1)
	p := prompts[0]
	assert.Equal(t, "brief", p.Name)
	assert.Equal(t, "Brief", p.Title)
	assert.Equal(t, "Writes a brief.", p.Description)
	assert.Equal(t, mcp.Meta{"example.com/k": 1}, p.Meta)
	assert.Equal(t, []mcp.PromptArgument{
		{Name: "topic", Title: "Topic", Description: "What to write about, briefly", Required: true},
		{Name: "tone", Description: "formal or casual"},
		{Name: "audience"},
		{Name: "length"},
		{Name: "Plain", Required: true},
	}, p.Arguments)

	res, err := r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief", Arguments: map[string]string{"topic": "Go", "Plain": "p"}})
	require.NoError(t, err)
	assert.Equal(t, "about Go", res.Messages[0].Content.Text)
	assert.Equal(t, briefArgs{Topic: "Go", Plain: "p"}, got, "absent optional arguments stay empty; pointers nil")

	_, err = r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief", Arguments: map[string]string{"topic": "Go", "Plain": "", "tone": "casual", "audience": "devs"}})
	require.NoError(t, err)
	require.NotNil(t, got.Tone)
	assert.Equal(t, "casual", *got.Tone)
	assert.Equal(t, "devs", got.Audience)
}

func TestRegisterPromptErrors(t *testing.T) {
	r := registry.New(nil)
	h := func(context.Context, struct{ N int }) (*mcp.GetPromptResult, error) { return nil, nil }
	err := registry.RegisterPrompt(r, "n", "", h, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `registry: prompt "n"`)
	assert.Contains(t, err.Error(), "prompt arguments are strings")
	var re *registry.RegistrationError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, registry.KindPrompt, re.Kind)

	type Inner struct{ A string }
	err = registry.RegisterPrompt(r, "e", "", func(context.Context, struct{ Inner }) (*mcp.GetPromptResult, error) { return nil, nil }, nil)
	assert.ErrorContains(t, err, "embedded field")

	err = registry.RegisterPrompt(r, "s", "", func(context.Context, string) (*mcp.GetPromptResult, error) { return nil, nil }, nil)
	assert.ErrorContains(t, err, "struct type")

	type dup struct {
		A string
		B string `json:"A"`
	}
	err = registry.RegisterPrompt(r, "d", "", func(context.Context, dup) (*mcp.GetPromptResult, error) { return nil, nil }, nil)
	assert.ErrorContains(t, err, `both name argument "A"`)

	err = registry.RegisterPrompt[struct{}](r, "nil", "", nil, nil)
	assert.ErrorContains(t, err, "nil handler")

	err = registry.RegisterPrompt(r, "c", "", func(context.Context, struct{ A string }) (*mcp.GetPromptResult, error) { return nil, nil },
		&registry.PromptOptions{Complete: map[string]registry.Completer{"B": registry.CompleteFrom()}})
	assert.ErrorContains(t, err, `completion for "B"`)

	assert.ErrorContains(t, r.AddPrompt(&mcp.Prompt{}, promptOK, nil), "prompt name is empty")
	assert.ErrorContains(t, r.AddPrompt(&mcp.Prompt{Name: "a", Arguments: []mcp.PromptArgument{{Name: "x"}, {Name: "x"}}}, promptOK, nil), "declared twice")
	assert.ErrorContains(t, r.AddPrompt(&mcp.Prompt{Name: "a", Arguments: []mcp.PromptArgument{{}}}, promptOK, nil), "has no name")
	assert.ErrorContains(t, r.AddPrompt(&mcp.Prompt{Name: "a", Meta: mcp.Meta{"bad key": 1}}, promptOK, nil), "_meta key")
	assert.ErrorContains(t, r.AddPrompt(nil, promptOK, nil), "nil definition")
}

func TestPromptDuplicatesAndChanges(t *testing.T) {
	r := registry.New(nil)
	changes := 0
	r.OnPromptsChange(func() { changes++ })
	def := &mcp.Prompt{Name: "p", Description: "d"}
	require.NoError(t, r.AddPrompt(def, promptOK, nil))
	require.ErrorIs(t, r.AddPrompt(def, promptOK, nil), registry.ErrDuplicatePrompt, "identical definition: still refused")
	require.ErrorIs(t, r.AddPrompt(&mcp.Prompt{Name: "p", Description: "other"}, promptOK, nil), registry.ErrDuplicatePrompt)
	assert.Equal(t, 1, changes)
	assert.True(t, r.RemovePrompt("p"))
	assert.False(t, r.RemovePrompt("p"))
	assert.Equal(t, 2, changes)
}

func TestGetPromptErrors(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	require.NoError(t, r.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []mcp.PromptArgument{{Name: "a", Required: true}, {Name: "b", Required: true}, {Name: "c"}}}, promptOK, nil))
	require.NoError(t, r.AddPrompt(&mcp.Prompt{Name: "bad"}, func(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Content{Type: mcp.ContentImage, Data: "!!", MimeType: "image/png"})}}, nil
	}, nil))
	require.NoError(t, r.AddPrompt(&mcp.Prompt{Name: "fails"}, func(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
		return nil, errors.New("backend down")
	}, nil))

	_, err := r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"})
	var rpc *mcp.Error
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, int64(mcp.CodeInvalidParams), rpc.Code)
	assert.Equal(t, mcp.ErrNotFound, rpc.Data.(*mcp.StructuredError).Code)

	_, err = r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p", Arguments: map[string]string{"b": "", "z": "1", "y": "2"}})
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, int64(mcp.CodeInvalidParams), rpc.Code)
	assert.Equal(t, `prompt "p": missing required argument(s) a; unknown argument(s) y, z`, rpc.Message)
	se := rpc.Data.(*mcp.StructuredError)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, []string{"a"}, se.Details["missing"])
	assert.Equal(t, []string{"y", "z"}, se.Details["unknown"])

	_, err = r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "bad"})
	assert.ErrorIs(t, err, &mcp.StructuredError{Code: mcp.ErrInternal})
	assert.ErrorContains(t, err, "base64")

	_, err = r.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fails"})
	assert.EqualError(t, err, "backend down", "a handler's error is returned as it is")
}

func TestComplete(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	many := make([]string, 250)
	for i := range many {
		many[i] = "v" + strconv.Itoa(i)
	}
	var gotArgs map[string]string
	require.NoError(t, r.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []mcp.PromptArgument{{Name: "lang"}, {Name: "free"}, {Name: "big"}}}, promptOK,
		&registry.PromptOptions{Complete: map[string]registry.Completer{
			"lang": registry.CompleteFrom("Go", "go-json", "Rust"),
			"big": func(_ context.Context, value string, args map[string]string) ([]string, int, error) {
				gotArgs = args
				return many[:10], 5000, nil // the completer knows there are more
			},
		}}))
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://{kind}/{id}", Name: "t"}, noopTemplate,
		&registry.TemplateOptions{Complete: map[string]registry.Completer{"id": registry.CompleteFrom(many...)}}))
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://err/{id}", Name: "e"}, noopTemplate,
		&registry.TemplateOptions{Complete: map[string]registry.Completer{"id": func(context.Context, string, map[string]string) ([]string, int, error) {
			return nil, 0, errors.New("index offline")
		}}}))

	complete := func(ref mcp.CompleteReference, arg, value string, ctxArgs map[string]string) (*mcp.Completion, error) {
		p := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteArgument{Name: arg, Value: value}}
		if ctxArgs != nil {
			p.Context = &mcp.CompleteContext{Arguments: ctxArgs}
		}
		res, err := r.Complete(ctx, p)
		if err != nil {
			return nil, err
		}
		return &res.Completion, nil
	}
	prompt := mcp.CompleteReference{Type: mcp.RefPrompt, Name: "p"}
	tmpl := mcp.CompleteReference{Type: mcp.RefResource, URI: "test://{kind}/{id}"}

	c, err := complete(prompt, "lang", "GO", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"Go", "go-json"}, c.Values, "prefix, ignoring case, in order")
	assert.Equal(t, int64(2), *c.Total)
	assert.False(t, c.HasMore)

	c, err = complete(prompt, "free", "x", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{}, c.Values, "no completer: no values")

	c, err = complete(prompt, "big", "", map[string]string{"lang": "Go"})
	require.NoError(t, err)
	assert.Len(t, c.Values, 10)
	assert.Equal(t, int64(5000), *c.Total)
	assert.True(t, c.HasMore)
	assert.Equal(t, map[string]string{"lang": "Go"}, gotArgs, "context arguments reach the completer")

	c, err = complete(tmpl, "id", "v", nil)
	require.NoError(t, err)
	assert.Len(t, c.Values, mcp.MaxCompletionValues)
	assert.Equal(t, "v0", c.Values[0])
	assert.Equal(t, int64(250), *c.Total)
	assert.True(t, c.HasMore)

	c, err = complete(tmpl, "kind", "", nil)
	require.NoError(t, err)
	assert.Empty(t, c.Values)

	for _, bad := range []struct {
		ref  mcp.CompleteReference
		arg  string
		code mcp.ErrorCode
	}{
		{mcp.CompleteReference{Type: mcp.RefPrompt, Name: "nope"}, "x", mcp.ErrNotFound},
		{prompt, "nope", mcp.ErrInvalidArgument},
		{mcp.CompleteReference{Type: mcp.RefResource, URI: "test://a/b"}, "id", mcp.ErrNotFound},
		{tmpl, "nope", mcp.ErrInvalidArgument},
		{mcp.CompleteReference{Type: "ref/tool"}, "x", mcp.ErrInvalidArgument},
	} {
		_, err := complete(bad.ref, bad.arg, "", nil)
		var rpc *mcp.Error
		require.ErrorAs(t, err, &rpc, "%+v", bad)
		assert.Equal(t, int64(mcp.CodeInvalidParams), rpc.Code)
		assert.Equal(t, bad.code, rpc.Data.(*mcp.StructuredError).Code)
	}

	_, err = complete(mcp.CompleteReference{Type: mcp.RefResource, URI: "test://err/{id}"}, "id", "", nil)
	assert.EqualError(t, err, "index offline")
}
