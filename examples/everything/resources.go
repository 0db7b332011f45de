package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// The resources: two static ones (text and binary), one whose contents
// change (clients subscribe to it), and a template serving a family of
// resources. The registry answers resources/list, resources/templates/list,
// resources/read, and (because it reports updates) resources/subscribe.

const watchedURI = "test://watched-resource"

// watchInterval is how often the watched resource changes.
const watchInterval = 3 * time.Second

// watchedVersion counts the updates of the watched resource.
var watchedVersion atomic.Int64

func registerResources(reg *registry.Registry) {
	must(reg.AddTextResource(&mcp.Resource{
		URI: "test://static-text", Name: "static-text", Title: "Static text",
		Description: "A static text resource", MimeType: "text/plain",
	}, "This is the content of the static text resource."))

	must(reg.AddBlobResource(&mcp.Resource{
		URI: "test://static-binary", Name: "static-binary", Title: "Static binary",
		Description: "A static binary resource (a 1x1 red PNG)", MimeType: "image/png",
	}, redPixelPNG))

	must(reg.AddResource(&mcp.Resource{
		URI: watchedURI, Name: "watched-resource", Title: "Watched resource",
		Description: "A text resource that changes every few seconds; subscribe to hear of it", MimeType: "text/plain",
	}, func(_ context.Context, uri string) ([]mcp.ResourceContents, error) {
		text := fmt.Sprintf("Watched resource content, version %d", watchedVersion.Load())
		return []mcp.ResourceContents{mcp.TextResourceContents(uri, "text/plain", text)}, nil
	}))

	// The template's handler receives the variables matched from the URI;
	// completion/complete offers values for {id}.
	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "test://template/{id}/data", Name: "template-data", Title: "Data by id",
		Description: "JSON data for an id, built from the URI", MimeType: "application/json",
	}, func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
		id := vars.Get("id")
		data, err := json.Marshal(struct {
			ID           string `json:"id"`
			TemplateTest bool   `json:"templateTest"`
			Data         string `json:"data"`
		}{id, true, "Data for ID: " + id})
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents(uri, "application/json", string(data))}, nil
	}, &registry.TemplateOptions{Complete: map[string]registry.Completer{
		"id": registry.CompleteFrom("123", "456", "789"),
	}}))
}

// updateWatchedResource changes the watched resource every interval until
// ctx ends; the registry tells the server, which sends
// notifications/resources/updated to the sessions subscribed to it.
func updateWatchedResource(ctx context.Context, reg *registry.Registry, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			watchedVersion.Add(1)
			reg.NotifyResourceUpdated(watchedURI)
		}
	}
}

// must panics on a registration error: in a main package a bad fixture is
// a programming error.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
