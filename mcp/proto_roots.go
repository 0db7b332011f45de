package mcp

// Root is a directory or file the client exposes to the server, as listed
// by roots/list.
type Root struct {
	URI  string `json:"uri"` // a file:// URI
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitempty"` // 2025-06-18
}

// ListRootsResult is the result of roots/list, which the server sends to
// the client. Roots is always written (an empty array when nil).
type ListRootsResult struct {
	Roots []Root `json:"roots"`
	Meta  Meta   `json:"_meta,omitempty"`
}
