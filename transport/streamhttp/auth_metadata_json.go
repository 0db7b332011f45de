package streamhttp

import "github.com/keelmcp/keel/internal/jsonrpc"

// protectedResourceMetadataFields is ProtectedResourceMetadata without its
// MarshalJSON method.
type protectedResourceMetadataFields ProtectedResourceMetadata

// MarshalJSON returns the document as the server serves it: with
// encoding/json too, authorization_servers is an array, never null.
func (m ProtectedResourceMetadata) MarshalJSON() ([]byte, error) {
	return jsonrpc.Marshal((*protectedResourceMetadataFields)(&m))
}
