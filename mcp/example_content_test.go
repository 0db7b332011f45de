package mcp_test

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// The content helpers encode raw bytes as base64, check MIME types and
// annotations, and return errors instead of panicking.
func ExampleImage() {
	img, err := mcp.Image([]byte{0x89, 'P', 'N', 'G'}, "image/png")
	if err != nil {
		panic(err)
	}
	img, _ = mcp.WithAnnotations(img, []mcp.Role{mcp.RoleUser}, 0.8, time.Date(2025, 6, 18, 9, 30, 0, 0, time.UTC))
	b, _ := json.Marshal(img)
	fmt.Println(string(b))

	_, err = mcp.Image([]byte("RIFF"), "audio/wav")
	fmt.Println(err)
	_, err = mcp.WithAnnotations(mcp.Text("hi"), []mcp.Role{"system"}, 0.5, time.Time{})
	fmt.Println(err)
	// Output:
	// {"type":"image","data":"iVBORw==","mimeType":"image/png","annotations":{"audience":["user"],"priority":0.8,"lastModified":"2025-06-18T09:30:00Z"}}
	// mcp: image content: MIME type "audio/wav" is not image/*
	// mcp: annotations: audience "system" is not "user" or "assistant"
}
