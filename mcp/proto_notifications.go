package mcp

// notificationParams are the params of notifications that carry nothing
// but _meta: notifications/initialized and every list_changed notification
// (NotificationTools/Resources/Prompts/RootsListChanged). Such
// notifications may also omit params.
type notificationParams struct {
	Meta Meta `json:"_meta,omitempty"`
}

// requestParams are the params of requests that carry nothing but _meta
// (ping, roots/list). Such requests may also omit params.
type requestParams struct {
	Meta Meta `json:"_meta,omitempty"`
}
