package mcp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/url"
	"strings"
	"time"
)

// Content helpers build content blocks from raw values and check them: the
// helpers encode binary data as base64 themselves, check MIME types with
// mime.ParseMediaType, and return errors (never panic) on bad input.

// Text returns a text content block.
func Text(text string) Content { return Content{Type: ContentText, Text: text} }

// Image returns an image content block holding data (raw bytes, encoded
// here as base64). mimeType must be a valid image/* media type.
func Image(data []byte, mimeType string) (Content, error) {
	return media(ContentImage, "image", data, mimeType)
}

// Audio returns an audio content block (2025-03-26) holding data (raw
// bytes, encoded here as base64). mimeType must be a valid audio/* media
// type. Clients of 2024-11-05 receive a text block describing it instead.
func Audio(data []byte, mimeType string) (Content, error) {
	return media(ContentAudio, "audio", data, mimeType)
}

func media(typ, kind string, data []byte, mimeType string) (Content, error) {
	if len(data) == 0 {
		return Content{}, fmt.Errorf("mcp: %s content without data", typ)
	}
	if err := checkMediaType(mimeType, kind); err != nil {
		return Content{}, fmt.Errorf("mcp: %s content: %w", typ, err)
	}
	return Content{Type: typ, Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}, nil
}

// CheckMediaType reports whether mimeType is a valid media type (RFC 2045,
// as mime.ParseMediaType reads it), such as "text/plain; charset=utf-8".
func CheckMediaType(mimeType string) error { return checkMediaType(mimeType, "") }

// checkMediaType checks that m is a valid media type and, if kind is not
// empty, that its top-level type is kind ("image", "audio").
func checkMediaType(m, kind string) error {
	if m == "" {
		return errors.New("MIME type is empty")
	}
	mt, _, err := mime.ParseMediaType(m)
	if err != nil {
		return fmt.Errorf("invalid MIME type %q: %v", m, err)
	}
	if typ, sub, ok := strings.Cut(mt, "/"); !ok || typ == "" || sub == "" {
		return fmt.Errorf("invalid MIME type %q: not type/subtype", m)
	}
	if kind != "" && !strings.HasPrefix(mt, kind+"/") {
		return fmt.Errorf("MIME type %q is not %s/*", m, kind)
	}
	return nil
}

// ResourceLink returns a resource_link content block (2025-06-18) pointing
// at res: its URI, Name, Title, Description, MimeType, Size, Annotations,
// Icons and Meta. The resource need not be listed by resources/list. URI
// must be an absolute URI, Name must not be empty, MimeType (if set) must
// be valid, and Annotations must pass Annotations.Validate. Clients of
// earlier revisions receive a text block naming the URI instead.
func ResourceLink(res *Resource) (Content, error) {
	if res == nil {
		return Content{}, errors.New("mcp: resource_link content without a resource")
	}
	if err := CheckResourceURI(res.URI); err != nil {
		return Content{}, fmt.Errorf("mcp: resource_link content: %w", err)
	}
	if res.Name == "" {
		return Content{}, fmt.Errorf("mcp: resource_link content for %s without a name", res.URI)
	}
	if res.MimeType != "" {
		if err := checkMediaType(res.MimeType, ""); err != nil {
			return Content{}, fmt.Errorf("mcp: resource_link content: %w", err)
		}
	}
	if err := res.Annotations.Validate(); err != nil {
		return Content{}, fmt.Errorf("mcp: resource_link content: %w", err)
	}
	return Content{Type: ContentResourceLink, URI: res.URI, Name: res.Name, Title: res.Title,
		Description: res.Description, MimeType: res.MimeType, Size: res.Size,
		Annotations: res.Annotations, Icons: res.Icons, Meta: res.Meta}, nil
}

// EmbeddedText returns a resource content block embedding a text resource.
// uri must be an absolute URI and mimeType a valid media type.
func EmbeddedText(uri, mimeType, text string) (Content, error) {
	if err := checkEmbedded(uri, mimeType); err != nil {
		return Content{}, err
	}
	rc := TextResourceContents(uri, mimeType, text)
	return Content{Type: ContentResource, Resource: &rc}, nil
}

// EmbeddedBlob returns a resource content block embedding a binary
// resource: data (raw bytes) is encoded here as base64. uri must be an
// absolute URI and mimeType a valid media type.
func EmbeddedBlob(uri, mimeType string, data []byte) (Content, error) {
	if err := checkEmbedded(uri, mimeType); err != nil {
		return Content{}, err
	}
	rc := BlobResourceContents(uri, mimeType, data)
	return Content{Type: ContentResource, Resource: &rc}, nil
}

func checkEmbedded(uri, mimeType string) error {
	if err := CheckResourceURI(uri); err != nil {
		return fmt.Errorf("mcp: embedded resource: %w", err)
	}
	if err := checkMediaType(mimeType, ""); err != nil {
		return fmt.Errorf("mcp: embedded resource %s: %w", uri, err)
	}
	return nil
}

// TextResourceContents returns the contents of a text resource, as a
// resources/read handler returns them. mimeType may be empty.
func TextResourceContents(uri, mimeType, text string) ResourceContents {
	return ResourceContents{URI: uri, MimeType: mimeType, Text: &text}
}

// BlobResourceContents returns the contents of a binary resource: data (raw
// bytes) is encoded here as base64. mimeType may be empty.
func BlobResourceContents(uri, mimeType string, data []byte) ResourceContents {
	b := base64.StdEncoding.EncodeToString(data)
	return ResourceContents{URI: uri, MimeType: mimeType, Blob: &b}
}

// CheckResourceURI reports whether uri is an absolute URI (RFC 3986: a
// scheme, then anything url.Parse accepts), as resource URIs must be.
func CheckResourceURI(uri string) error {
	if uri == "" {
		return errors.New("resource URI is empty")
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("invalid resource URI %q: %v", uri, err)
	}
	if u.Scheme == "" {
		return fmt.Errorf("resource URI %q is not absolute (no scheme)", uri)
	}
	return nil
}

// WithAnnotations returns c with annotations: audience (RoleUser and/or
// RoleAssistant; nil for none), priority (0 = least, 1 = most important)
// and lastModified (written in RFC 3339; the zero time for none). The
// priority is always set; to set fewer members, assign c.Annotations and
// check it with Annotations.Validate. lastModified reaches only clients of
// 2025-06-18 and later.
func WithAnnotations(c Content, audience []Role, priority float64, lastModified time.Time) (Content, error) {
	a := &Annotations{Priority: &priority}
	for _, r := range audience {
		a.Audience = append(a.Audience, string(r))
	}
	if !lastModified.IsZero() {
		a.LastModified = lastModified.UTC().Format(time.RFC3339Nano)
	}
	if err := a.Validate(); err != nil {
		return Content{}, err
	}
	c.Annotations = a
	return c, nil
}

// Validate checks annotations: every audience member is "user" or
// "assistant", priority (if set) lies in [0, 1], and lastModified (if set)
// is an RFC 3339 date-time. A nil *Annotations is valid.
func (a *Annotations) Validate() error {
	if a == nil {
		return nil
	}
	for _, r := range a.Audience {
		if r != string(RoleUser) && r != string(RoleAssistant) {
			return fmt.Errorf("mcp: annotations: audience %q is not \"user\" or \"assistant\"", r)
		}
	}
	if p := a.Priority; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
		return fmt.Errorf("mcp: annotations: priority %v is not between 0 and 1", *p)
	}
	if a.LastModified != "" {
		if _, err := time.Parse(time.RFC3339Nano, a.LastModified); err != nil {
			return fmt.Errorf("mcp: annotations: lastModified %q is not an RFC 3339 date-time", a.LastModified)
		}
	}
	return nil
}

// Validate checks a content block: the members its type requires, base64
// data and a matching MIME type for images and audio, an absolute URI and a
// name for resource links, exactly one of text and blob (valid base64) for
// embedded resources, and valid annotations.
func (c *Content) Validate() error {
	switch c.Type {
	case ContentText:
	case ContentImage, ContentAudio:
		kind := "image"
		if c.Type == ContentAudio {
			kind = "audio"
		}
		if err := checkMediaType(c.MimeType, kind); err != nil {
			return fmt.Errorf("mcp: %s content: %w", c.Type, err)
		}
		if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil || c.Data == "" {
			return fmt.Errorf("mcp: %s content: data is not non-empty base64", c.Type)
		}
	case ContentResourceLink:
		if err := CheckResourceURI(c.URI); err != nil {
			return fmt.Errorf("mcp: resource_link content: %w", err)
		}
		if c.Name == "" {
			return fmt.Errorf("mcp: resource_link content for %s without a name", c.URI)
		}
	case ContentResource:
		if c.Resource == nil {
			return errors.New("mcp: resource content without a resource")
		}
		if err := c.Resource.Validate(); err != nil {
			return fmt.Errorf("mcp: resource content: %w", err)
		}
	default:
		return fmt.Errorf("mcp: unknown content block type %q", c.Type)
	}
	return c.Annotations.Validate()
}

// Validate checks resource contents: an absolute URI, a valid MIME type if
// one is set, and exactly one of Text and Blob, a Blob being valid base64.
func (rc *ResourceContents) Validate() error {
	if err := CheckResourceURI(rc.URI); err != nil {
		return err
	}
	if rc.MimeType != "" {
		if err := checkMediaType(rc.MimeType, ""); err != nil {
			return fmt.Errorf("%s: %w", rc.URI, err)
		}
	}
	switch {
	case rc.Text != nil && rc.Blob != nil:
		return fmt.Errorf("%s: contents hold both text and blob", rc.URI)
	case rc.Text == nil && rc.Blob == nil:
		return fmt.Errorf("%s: contents hold neither text nor blob", rc.URI)
	case rc.Blob != nil:
		if _, err := base64.StdEncoding.DecodeString(*rc.Blob); err != nil {
			return fmt.Errorf("%s: blob is not valid base64", rc.URI)
		}
	}
	return nil
}

// UserMessage returns a prompt message from the user holding c.
func UserMessage(c Content) PromptMessage { return PromptMessage{Role: RoleUser, Content: c} }

// AssistantMessage returns a prompt message from the assistant holding c.
func AssistantMessage(c Content) PromptMessage {
	return PromptMessage{Role: RoleAssistant, Content: c}
}
