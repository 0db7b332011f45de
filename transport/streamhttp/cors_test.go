package streamhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// "*" admits every origin, still echoed (never "*", so that requests with
// an Authorization header are allowed by browsers).
func TestCORSAnyOrigin(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := streamhttp.CORS(&streamhttp.CORSOptions{AllowedOrigins: []string{"*"}})(next)
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Origin", "https://anywhere.example")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusTeapot, rec.Code)
	assert.Equal(t, "https://anywhere.example", rec.Header().Get("Access-Control-Allow-Origin"))
}
