package mcp

import (
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Content block types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"         // 2025-03-26
	ContentResourceLink = "resource_link" // 2025-06-18
	ContentResource     = "resource"      // an embedded resource
)

// Content is one content block of a tool result, prompt message or sampling
// message. Type selects which fields are meaningful:
//
//	text           Text
//	image, audio   Data (base64), MimeType
//	resource_link  URI, Name, Title, Description, MimeType, Size, Icons
//	resource       Resource
//
// Every type may carry Annotations and Meta. The wire form holds only the
// members of its type; required members are always written.
type Content struct {
	Type        string
	Text        string
	Data        string // base64
	MimeType    string
	URI         string
	Name        string
	Title       string
	Description string
	Size        *int64
	Icons       []Icon
	Resource    *ResourceContents
	Annotations *Annotations
	Meta        Meta
}

// Annotations are hints about how a client should use an object.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`     // "user", "assistant"
	Priority     *float64 `json:"priority,omitzero"`      // 0 (least) to 1 (most important)
	LastModified string   `json:"lastModified,omitempty"` // ISO 8601 (2025-06-18)
}

// ResourceContents is the contents of a resource: Text or Blob (base64).
type ResourceContents struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitzero"`
	Blob     *string `json:"blob,omitzero"`
	Meta     Meta    `json:"_meta,omitempty"`
}

type textWire struct {
	Type        string       `json:"type"`
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitzero"`
	Meta        Meta         `json:"_meta,omitempty"`
}

type mediaWire struct {
	Type        string       `json:"type"`
	Data        string       `json:"data"`
	MimeType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitzero"`
	Meta        Meta         `json:"_meta,omitempty"`
}

type linkWire struct {
	Type        string       `json:"type"`
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MimeType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitzero"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitzero"`
	Meta        Meta         `json:"_meta,omitempty"`
}

type resourceWire struct {
	Type        string            `json:"type"`
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations,omitzero"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// marshalWire writes the wire form of the block for its Type.
func (c Content) marshalWire(enc *jsontext.Encoder) error {
	switch c.Type {
	case ContentText:
		if c.Annotations == nil && len(c.Meta) == 0 && utf8.ValidString(c.Text) {
			return writeTextBlock(enc, c.Text)
		}
		return json.MarshalEncode(enc, &textWire{c.Type, c.Text, c.Annotations, c.Meta})
	case ContentImage, ContentAudio:
		return json.MarshalEncode(enc, &mediaWire{c.Type, c.Data, c.MimeType, c.Annotations, c.Meta})
	case ContentResourceLink:
		return json.MarshalEncode(enc, &linkWire{c.Type, c.URI, c.Name, c.Title, c.Description, c.MimeType, c.Size, c.Icons, c.Annotations, c.Meta})
	case ContentResource:
		if c.Resource == nil {
			return fmt.Errorf("mcp: resource content block without Resource")
		}
		return json.MarshalEncode(enc, &resourceWire{c.Type, c.Resource, c.Annotations, c.Meta})
	default:
		return fmt.Errorf("mcp: unknown content block type %q", c.Type)
	}
}

// writeTextBlock writes a text block with neither annotations nor _meta,
// whose text is valid UTF-8, token by token: what textWire's arshaler
// writes for it, without a textWire to allocate.
func writeTextBlock(enc *jsontext.Encoder, text string) error {
	for _, t := range [...]jsontext.Token{jsontext.BeginObject, jsontext.String("type"), jsontext.String(ContentText),
		jsontext.String("text"), jsontext.String(text), jsontext.EndObject} {
		if err := enc.WriteToken(t); err != nil {
			return err
		}
	}
	return nil
}

type contentWire struct {
	Type        string            `json:"type"`
	Text        *string           `json:"text"`
	Data        *string           `json:"data"`
	MimeType    string            `json:"mimeType"`
	URI         *string           `json:"uri"`
	Name        *string           `json:"name"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Size        *int64            `json:"size"`
	Icons       []Icon            `json:"icons"`
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations"`
	Meta        Meta              `json:"_meta"`
}

// unmarshalWire reads one content block and checks that the members its
// type requires are present.
func (c *Content) unmarshalWire(dec *jsontext.Decoder) error {
	var w contentWire
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, MimeType: w.MimeType, Title: w.Title, Description: w.Description,
		Size: w.Size, Icons: w.Icons, Resource: w.Resource, Annotations: w.Annotations, Meta: w.Meta}
	missing := func(member string) error { return missingMember(w.Type, member) }
	switch w.Type {
	case ContentText, ContentImage, ContentAudio:
		var err error
		c.Text, c.Data, err = decodeMediaMembers(w.Type, w.Text, w.Data, w.MimeType)
		if err != nil {
			return err
		}
	case ContentResourceLink:
		if w.URI == nil {
			return missing("uri")
		}
		if w.Name == nil {
			return missing("name")
		}
		c.URI, c.Name = *w.URI, *w.Name
	case ContentResource:
		if w.Resource == nil {
			return missing("resource")
		}
	default:
		return fmt.Errorf("mcp: unknown content block type %q", w.Type)
	}
	return nil
}

// missingMember is the error for a content block of type typ that lacks a
// member its type requires.
func missingMember(typ, member string) error {
	return fmt.Errorf("mcp: %s content block without %q", typ, member)
}

// decodeMediaMembers checks and returns the members of a text, image or
// audio block (the types content and sampling blocks share).
func decodeMediaMembers(typ string, text, data *string, mimeType string) (textOut, dataOut string, err error) {
	switch typ {
	case ContentText:
		if text == nil {
			return "", "", missingMember(typ, "text")
		}
		return *text, "", nil
	default: // image, audio
		if data == nil {
			return "", "", missingMember(typ, "data")
		}
		if mimeType == "" {
			return "", "", missingMember(typ, "mimeType")
		}
		return "", *data, nil
	}
}
