package mcp_test

import (
	"math"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

func wire(t *testing.T, c mcp.Content) string {
	t.Helper()
	b, err := json.Marshal(c, json.Deterministic(true))
	require.NoError(t, err)
	return string(b)
}

func TestContentHelpers(t *testing.T) {
	assert.Equal(t, `{"type":"text","text":"hi"}`, wire(t, mcp.Text("hi")))

	img, err := mcp.Image([]byte{0x89, 'P', 'N', 'G'}, "image/png")
	require.NoError(t, err)
	assert.Equal(t, `{"type":"image","data":"iVBORw==","mimeType":"image/png"}`, wire(t, img))
	require.NoError(t, img.Validate())

	audio, err := mcp.Audio([]byte("RIFF"), "audio/wav; codecs=1")
	require.NoError(t, err)
	assert.Equal(t, `{"type":"audio","data":"UklGRg==","mimeType":"audio/wav; codecs=1"}`, wire(t, audio))

	size := int64(12)
	link, err := mcp.ResourceLink(&mcp.Resource{URI: "file:///r.txt", Name: "r.txt", MimeType: "text/plain", Size: &size})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"resource_link","uri":"file:///r.txt","name":"r.txt","mimeType":"text/plain","size":12}`, wire(t, link))

	et, err := mcp.EmbeddedText("test://a", "text/plain", "body")
	require.NoError(t, err)
	assert.Equal(t, `{"type":"resource","resource":{"uri":"test://a","mimeType":"text/plain","text":"body"}}`, wire(t, et))

	eb, err := mcp.EmbeddedBlob("test://b", "application/octet-stream", []byte{0, 1, 2})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"resource","resource":{"uri":"test://b","mimeType":"application/octet-stream","blob":"AAEC"}}`, wire(t, eb))
	require.NoError(t, eb.Validate())

	annotated, err := mcp.WithAnnotations(mcp.Text("x"), []mcp.Role{mcp.RoleUser, mcp.RoleAssistant}, 0.25,
		time.Date(2025, 6, 18, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600)))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"text","text":"x","annotations":{"audience":["user","assistant"],"priority":0.25,"lastModified":"2025-06-18T10:00:00Z"}}`, wire(t, annotated))
	assert.Equal(t, `{"type":"text","text":"x"}`, wire(t, mcp.Text("x")), "the input is not modified")

	msg := mcp.AssistantMessage(mcp.Text("ok"))
	assert.Equal(t, mcp.RoleAssistant, msg.Role)
	assert.Equal(t, mcp.RoleUser, mcp.UserMessage(mcp.Text("ok")).Role)
}

func TestContentHelperErrors(t *testing.T) {
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"image without data", func() error { _, err := mcp.Image(nil, "image/png"); return err }, "without data"},
		{"image with audio type", func() error { _, err := mcp.Image([]byte{1}, "audio/wav"); return err }, "is not image/*"},
		{"image with bad type", func() error { _, err := mcp.Image([]byte{1}, "image/"); return err }, "invalid MIME type"},
		{"image without type", func() error { _, err := mcp.Image([]byte{1}, ""); return err }, "MIME type is empty"},
		{"audio with image type", func() error { _, err := mcp.Audio([]byte{1}, "image/png"); return err }, "is not audio/*"},
		{"link without resource", func() error { _, err := mcp.ResourceLink(nil); return err }, "without a resource"},
		{"link with relative URI", func() error { _, err := mcp.ResourceLink(&mcp.Resource{URI: "r.txt", Name: "r"}); return err }, "not absolute"},
		{"link without name", func() error { _, err := mcp.ResourceLink(&mcp.Resource{URI: "file:///r"}); return err }, "without a name"},
		{"link with bad MIME", func() error {
			_, err := mcp.ResourceLink(&mcp.Resource{URI: "file:///r", Name: "r", MimeType: "nope"})
			return err
		}, "invalid MIME type"},
		{"embedded without MIME", func() error { _, err := mcp.EmbeddedText("test://a", "", "x"); return err }, "MIME type is empty"},
		{"embedded with bad URI", func() error { _, err := mcp.EmbeddedBlob("::", "text/plain", nil); return err }, "invalid resource URI"},
		{"audience", func() error {
			_, err := mcp.WithAnnotations(mcp.Text("x"), []mcp.Role{"system"}, 0, time.Time{})
			return err
		}, `audience "system"`},
		{"priority above 1", func() error { _, err := mcp.WithAnnotations(mcp.Text("x"), nil, 1.5, time.Time{}); return err }, "priority 1.5"},
		{"priority below 0", func() error { _, err := mcp.WithAnnotations(mcp.Text("x"), nil, -0.1, time.Time{}); return err }, "priority -0.1"},
		{"priority NaN", func() error { _, err := mcp.WithAnnotations(mcp.Text("x"), nil, math.NaN(), time.Time{}); return err }, "priority NaN"},
		{"lastModified", func() error { return (&mcp.Annotations{LastModified: "2025-13-01"}).Validate() }, "RFC 3339"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestContentValidate(t *testing.T) {
	text := "t"
	bad := "%%%"
	for _, tc := range []struct {
		c    mcp.Content
		want string // "" = valid
	}{
		{mcp.Text("ok"), ""},
		{mcp.Content{Type: mcp.ContentImage, Data: "!!", MimeType: "image/png"}, "base64"},
		{mcp.Content{Type: mcp.ContentImage, Data: "AA==", MimeType: "text/plain"}, "image/*"},
		{mcp.Content{Type: mcp.ContentAudio, Data: "", MimeType: "audio/wav"}, "base64"},
		{mcp.Content{Type: mcp.ContentResourceLink, URI: "file:///x"}, "without a name"},
		{mcp.Content{Type: mcp.ContentResource}, "without a resource"},
		{mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: "test://x"}}, "neither text nor blob"},
		{mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: "test://x", Text: &text, Blob: &text}}, "both text and blob"},
		{mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: "test://x", Blob: &bad}}, "not valid base64"},
		{mcp.Content{Type: "hologram"}, "unknown content block type"},
		{mcp.Content{Type: mcp.ContentText, Annotations: &mcp.Annotations{Audience: []string{"everyone"}}}, "audience"},
	} {
		err := tc.c.Validate()
		if tc.want == "" {
			assert.NoError(t, err)
		} else if assert.Error(t, err, "%+v", tc.c) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}
