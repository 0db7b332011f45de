package mcp

import "encoding/json"

// Resource is a resource a server can read, as listed by resources/list.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"` // 2025-06-18
	Description string       `json:"description,omitempty"`
	MimeType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitzero"` // raw size in bytes, if known
	Annotations *Annotations `json:"annotations,omitzero"`
	Icons       []Icon       `json:"icons,omitempty"` // 2025-11-25
	Meta        Meta         `json:"_meta,omitempty"` // 2025-06-18
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template, as listed by resources/templates/list.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"` // 2025-06-18
	Description string       `json:"description,omitempty"`
	MimeType    string       `json:"mimeType,omitempty"` // of every matching resource, if they share one
	Annotations *Annotations `json:"annotations,omitzero"`
	Icons       []Icon       `json:"icons,omitempty"` // 2025-11-25
	Meta        Meta         `json:"_meta,omitempty"` // 2025-06-18
}

// ListResourcesResult is the result of resources/list. Resources is always
// written (an empty array when nil).
type ListResourcesResult struct {
	Resources  []*Resource `json:"resources"`
	NextCursor string      `json:"nextCursor,omitempty"`
	Meta       Meta        `json:"_meta,omitempty"`
}

// ListResourceTemplatesResult is the result of resources/templates/list.
// ResourceTemplates is always written (an empty array when nil).
type ListResourceTemplatesResult struct {
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
	Meta              Meta                `json:"_meta,omitempty"`
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	URI string `json:"uri"`
	// InputResponses and RequestState answer an input-required result
	// (2026-07-28; see InputRequiredError).
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
	Meta           Meta                       `json:"_meta,omitempty"`
}

// ReadResourceResult is the result of resources/read: the contents of the
// resource, or of the resources below it. Each element holds Text or Blob.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     Meta               `json:"_meta,omitempty"`
}

// subscribeParams are the params of resources/subscribe.
type subscribeParams struct {
	URI  string `json:"uri"`
	Meta Meta   `json:"_meta,omitempty"`
}

// unsubscribeParams are the params of resources/unsubscribe.
type unsubscribeParams struct {
	URI  string `json:"uri"`
	Meta Meta   `json:"_meta,omitempty"`
}

// resourceUpdatedNotificationParams are the params of
// notifications/resources/updated, sent for a resource the client
// subscribed to.
type resourceUpdatedNotificationParams struct {
	URI  string `json:"uri"` // may be a sub-resource of the subscribed one
	Meta Meta   `json:"_meta,omitempty"`
}
