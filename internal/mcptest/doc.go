// Package mcptest is keel's test support: the official MCP JSON Schemas of
// every revision keel negotiates and a validator for the messages a server
// emits (schema.go), deterministic test servers and a Tracker that checks a
// connection's traffic against the negotiated revision (server.go), a txtar
// parser (txtar.go), a fake ToolSource with tools that exercise every result
// and error path (tools.go), and a runner for golden transcripts of a server
// conversation (transcript.go).
//
// Tests of any keel package may import it; production code never does.
package mcptest
