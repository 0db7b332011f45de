package mcp

// RespondEarly answers the call at once, through the same answer-once gate
// the response deadline uses, and reports whether it was the first answer.
// It exists only in this package's test builds, for tests of the gate that
// need the early answer at an exact point of a handler; the API answers
// early only through ToolCall.WithResponseDeadline.
func (c *ToolCall) RespondEarly(res *CallToolResult, err error) bool {
	return c.respondEarly(res, err)
}

// ParseRequestMetaForTest is parseRequestMeta, for the tests of package
// mcp_test that check its reading of _meta.
func ParseRequestMetaForTest(params []byte) (RequestMeta, *Error) { return parseRequestMeta(params) }
