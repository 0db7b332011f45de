// Package mcp is the Model Context Protocol itself: the vocabulary
// (requests, results, content, capabilities, errors), the Server that
// serves any Transport, and the Client.
//
// # Revisions and eras
//
// A Server speaks two eras at once. Legacy sessions negotiate 2025-11-25,
// 2025-06-18, 2025-03-26 or 2024-11-05 with initialize and keep that
// revision, the client's capabilities and the logging level for the life of
// the connection. Revision 2026-07-28 is stateless: a request whose
// params._meta names io.modelcontextprotocol/protocolVersion is served from
// its own _meta (capabilities, logLevel, progressToken) on any connection,
// initialized or not; server/discover replaces initialize,
// subscriptions/listen replaces the GET stream and resources/subscribe,
// and every result carries resultType. ProtocolVersionFromContext and
// ClientCapabilitiesFromContext tell a handler which applies to the request
// it serves.
//
// # Asking the client
//
// A handler that needs the user or the client's model returns an
// *InputRequiredError (InputRequired) and reads the answers with
// InputFromContext on the next call. A 2026-07-28 client receives an
// input_required result with a sealed requestState and calls again; a
// legacy client is asked by the server itself (elicitation/create,
// sampling/createMessage, roots/list), and the handler runs again. The
// Session methods CreateMessage, Elicit and ListRoots remain for legacy
// sessions only.
//
// # Requests
//
// Every request is owned, from the moment it is read until it is answered,
// by one value that registers its id (a duplicate is refused), cancels it
// on notifications/cancelled or at the end of the connection, recovers a
// panic of its handler, and answers it exactly once — also when a response
// deadline (ToolCall.AnswerAtDeadline) answers first. The methods a server
// serves, and the eras they exist in, are one static table.
package mcp
