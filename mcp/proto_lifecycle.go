package mcp

// Implementation names and describes an MCP client or server (clientInfo,
// serverInfo).
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`       // 2025-06-18
	Description string `json:"description,omitempty"` // 2025-11-25
	WebsiteURL  string `json:"websiteUrl,omitempty"`  // 2025-11-25
	Icons       []Icon `json:"icons,omitempty"`       // 2025-11-25
}

// Icon is an icon a client may display (2025-11-25).
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"` // "light" or "dark"
}

// initializeParams are the params of initialize.
type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
	Meta            Meta               `json:"_meta,omitempty"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
	Meta            Meta               `json:"_meta,omitempty"`
}

// ClientCapabilities are what a client declares in initialize.
type ClientCapabilities struct {
	Experimental map[string]any         `json:"experimental,omitempty"`
	Roots        *RootsCapability       `json:"roots,omitzero"`
	Sampling     *SamplingCapability    `json:"sampling,omitzero"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitzero"`
	Tasks        *ClientTasksCapability `json:"tasks,omitzero"`
	// Extensions lists the MCP extensions the client supports, by
	// identifier (2026-07-28; e.g. ExtensionTasks).
	Extensions map[string]any `json:"extensions,omitempty"`
}

// RootsCapability is the client's roots capability.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitzero"`
}

// SamplingCapability is the client's sampling capability.
type SamplingCapability struct {
	Context *struct{} `json:"context,omitzero"` // includeContext other than "none"
	Tools   *struct{} `json:"tools,omitzero"`   // tools and toolChoice (2025-11-25)
}

// ElicitationCapability is the client's elicitation capability. An empty
// object means form mode only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitzero"`
	URL  *struct{} `json:"url,omitzero"`
}

// ClientTasksCapability is the client's tasks capability (2025-11-25).
type ClientTasksCapability struct {
	List     *struct{}                     `json:"list,omitzero"`
	Cancel   *struct{}                     `json:"cancel,omitzero"`
	Requests *ClientTaskRequestsCapability `json:"requests,omitzero"`
}

// ClientTaskRequestsCapability names the server-to-client requests a client
// can run as tasks.
type ClientTaskRequestsCapability struct {
	Sampling *struct {
		CreateMessage *struct{} `json:"createMessage,omitzero"`
	} `json:"sampling,omitzero"`
	Elicitation *struct {
		Create *struct{} `json:"create,omitzero"`
	} `json:"elicitation,omitzero"`
}

// ServerCapabilities are what a server declares in its initialize result.
type ServerCapabilities struct {
	Experimental map[string]any         `json:"experimental,omitempty"`
	Logging      *struct{}              `json:"logging,omitzero"`
	Completions  *struct{}              `json:"completions,omitzero"` // 2025-03-26
	Prompts      *ListChangedCapability `json:"prompts,omitzero"`
	Resources    *ResourcesCapability   `json:"resources,omitzero"`
	Tools        *ListChangedCapability `json:"tools,omitzero"`
	Tasks        *ServerTasksCapability `json:"tasks,omitzero"` // 2025-11-25
	// Extensions lists the MCP extensions the server supports, by
	// identifier (2026-07-28; e.g. ExtensionTasks).
	Extensions map[string]any `json:"extensions,omitempty"`
}

// ListChangedCapability declares whether list_changed notifications are sent.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitzero"`
}

// ResourcesCapability is the server's resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitzero"`
	ListChanged bool `json:"listChanged,omitzero"`
}

// ServerTasksCapability is the server's tasks capability (2025-11-25).
type ServerTasksCapability struct {
	List     *struct{}               `json:"list,omitzero"`
	Cancel   *struct{}               `json:"cancel,omitzero"`
	Requests *TaskRequestsCapability `json:"requests,omitzero"`
}

// TaskRequestsCapability names the requests that may be augmented with a task.
type TaskRequestsCapability struct {
	Tools *ToolTaskRequests `json:"tools,omitzero"`
}

// ToolTaskRequests declares that tools/call may run as a task.
type ToolTaskRequests struct {
	Call *struct{} `json:"call,omitzero"`
}

// emptyResult is the result of ping and other requests that return nothing.
type emptyResult struct {
	Meta Meta `json:"_meta,omitempty"`
}

// paginatedParams are the params of every list request.
type paginatedParams struct {
	Cursor string `json:"cursor,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}
