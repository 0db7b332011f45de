package mcptest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// CatalogConfig is the "catalog" member of a transcript's server file: it
// serves the fixtures of NewCatalog (a registry.Registry) as resources,
// prompts and completions.
type CatalogConfig struct {
	Resources   bool `json:"resources"`   // ServerOptions.Resources
	Prompts     bool `json:"prompts"`     // ServerOptions.Prompts
	Completions bool `json:"completions"` // ServerOptions.Completions
	// Tools serves the catalog's registry as the ToolSource too, with the
	// mutator tools (see CatalogTools), instead of the fake tools.
	Tools bool `json:"tools"`
	// Static hides the registry's change and update notifiers: no
	// listChanged, no subscribe.
	Static bool `json:"static"`
}

// apply sets the sources the config names (nothing when c is nil).
func (c *CatalogConfig) apply(o *mcp.ServerOptions) {
	if c == nil {
		return
	}
	reg := NewCatalog()
	if c.Tools {
		AddCatalogTools(reg)
		o.Tools = reg
	}
	if c.Resources {
		o.Resources = reg
		if c.Static {
			o.Resources = struct{ mcp.ResourceSource }{reg}
		}
	}
	if c.Prompts {
		o.Prompts = reg
		if c.Static {
			o.Prompts = struct{ mcp.PromptSource }{reg}
		}
	}
	if c.Completions {
		o.Completions = reg
	}
}

// Fixture URIs and names of NewCatalog.
const (
	ResourceHello  = "test://static/hello.txt" // text, with title, annotations, icons and _meta
	ResourceLogo   = "test://static/logo.png"  // blob (image/png)
	ResourceGone   = "test://static/gone"      // listed, but its read fails with fs.ErrNotExist: -32002
	ResourceBroken = "test://static/broken"    // its read fails with a plain error: -32603

	TemplateUser   = "test://users/{id}"           // JSON text {"id": id} with _meta; id "ghost" is not found; id completes from alice, bob, carol, dave
	TemplateFiles  = "test://host/files{/path*}"   // text "path=a/b"; a path ending in "dir" holds a.txt and b.txt
	TemplateSearch = "test://host/search{?q,lang}" // text "q=...;lang=..."; lang completes from en, de, fr
	TemplateRepo   = "test://repos/{owner}/{repo}" // owner completes from keel, other; repo depends on context owner
	TemplateNumber = "test://numbers/{n}"          // n completes from 0..149 (capped at 100 values)

	PromptGreet  = "greet"  // typed: name (required), style (optional)
	PromptReview = "review" // typed: code (required), language (omitempty)
	PromptRich   = "rich"   // no arguments; image, audio, resource_link and embedded resource messages
	PromptBroken = "broken" // returns a message with role "system": -32603
)

// LogoPNG is the contents of ResourceLogo.
var LogoPNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

// GreetArgs are the arguments of the greet prompt.
type GreetArgs struct {
	Name  string  `json:"name" jsonschema:"description=Who to greet"`
	Style *string `json:"style" jsonschema:"title=Style,description=formal or casual"`
}

// ReviewArgs are the arguments of the review prompt.
type ReviewArgs struct {
	Code     string `json:"code" jsonschema:"description=The code to review"`
	Language string `json:"language,omitempty"`
}

// NewCatalog returns a registry holding the fixture resources, templates
// and prompts (see the Resource*, Template* and Prompt* constants).
func NewCatalog() *registry.Registry {
	reg := registry.New(nil)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	half := 0.5
	must(reg.AddTextResource(&mcp.Resource{URI: ResourceHello, Name: "hello.txt", Title: "Hello", Description: "A greeting.",
		Annotations: &mcp.Annotations{Audience: []string{"user"}, Priority: &half, LastModified: "2025-01-01T00:00:00Z"},
		Icons:       []mcp.Icon{{Src: "https://example.com/hello.png", MimeType: "image/png"}},
		Meta:        mcp.Meta{"example.com/owner": "tests"}}, "Hello, world!"))
	must(reg.AddBlobResource(&mcp.Resource{URI: ResourceLogo, Name: "logo.png", MimeType: "image/png"}, LogoPNG))
	must(reg.AddResource(&mcp.Resource{URI: ResourceGone, Name: "gone"}, func(context.Context, string) ([]mcp.ResourceContents, error) {
		return nil, fmt.Errorf("open gone: %w", fs.ErrNotExist)
	}))
	must(reg.AddResource(&mcp.Resource{URI: ResourceBroken, Name: "broken"}, func(context.Context, string) ([]mcp.ResourceContents, error) {
		return nil, errors.New("disk on fire")
	}))

	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateUser, Name: "user", Title: "User", MimeType: "application/json"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			if vars.Get("id") == "ghost" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return []mcp.ResourceContents{{Text: ptr(`{"id":` + strconv.Quote(vars.Get("id")) + `}`), Meta: mcp.Meta{"example.com/source": "users"}}}, nil
		}, &registry.TemplateOptions{Complete: map[string]registry.Completer{"id": registry.CompleteFrom("alice", "bob", "carol", "dave")}}))
	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateFiles, Name: "file", MimeType: "text/plain"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			p := vars["path"]
			if len(p) > 0 && p[len(p)-1] == "dir" {
				return []mcp.ResourceContents{
					mcp.TextResourceContents(uri+"/a.txt", "", "a"),
					mcp.TextResourceContents(uri+"/b.txt", "", "b"),
				}, nil
			}
			return []mcp.ResourceContents{{Text: ptr("path=" + strings.Join(p, "/"))}}, nil
		}, nil))
	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateSearch, Name: "search"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, "text/plain", "q="+vars.Get("q")+";lang="+vars.Get("lang"))}, nil
		}, &registry.TemplateOptions{Complete: map[string]registry.Completer{"lang": registry.CompleteFrom("en", "de", "fr")}}))
	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateRepo, Name: "repo"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, "text/plain", vars.Get("owner")+"/"+vars.Get("repo"))}, nil
		}, &registry.TemplateOptions{Complete: map[string]registry.Completer{
			"owner": registry.CompleteFrom("keel", "other"),
			"repo": func(ctx context.Context, value string, args map[string]string) ([]string, int, error) {
				if args["owner"] == "keel" {
					return registry.CompleteFrom("keel-core", "keel-docs")(ctx, value, args)
				}
				return registry.CompleteFrom("misc")(ctx, value, args)
			},
		}}))
	numbers := make([]string, 150)
	for i := range numbers {
		numbers[i] = strconv.Itoa(i)
	}
	must(reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TemplateNumber, Name: "number"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, "text/plain", vars.Get("n"))}, nil
		}, &registry.TemplateOptions{Complete: map[string]registry.Completer{"n": registry.CompleteFrom(numbers...)}}))

	must(registry.RegisterPrompt(reg, PromptGreet, "Greets someone.", func(_ context.Context, a GreetArgs) (*mcp.GetPromptResult, error) {
		text := "Hello, " + a.Name + "!"
		if a.Style != nil && *a.Style == "formal" {
			text = "Good day, " + a.Name + "."
		}
		return &mcp.GetPromptResult{Description: "A greeting", Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text(text))}}, nil
	}, &registry.PromptOptions{Complete: map[string]registry.Completer{
		"name":  registry.CompleteFrom("Alice", "Bob"),
		"style": registry.CompleteFrom("formal", "casual"),
	}}))
	must(registry.RegisterPrompt(reg, PromptReview, "Reviews code.", func(_ context.Context, a ReviewArgs) (*mcp.GetPromptResult, error) {
		lang := a.Language
		if lang == "" {
			lang = "unknown"
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
			mcp.UserMessage(mcp.Text("Review this code (" + lang + "):\n" + a.Code)),
			mcp.AssistantMessage(mcp.Text("Sure, let me look.")),
		}}, nil
	}, nil))
	must(registry.RegisterPrompt(reg, PromptRich, "Shows every content type.", func(context.Context, struct{}) (*mcp.GetPromptResult, error) {
		img, err := mcp.Image(LogoPNG, "image/png")
		if err != nil {
			return nil, err
		}
		audio, err := mcp.Audio([]byte("RIFF"), "audio/wav")
		if err != nil {
			return nil, err
		}
		link, err := mcp.ResourceLink(&mcp.Resource{URI: ResourceHello, Name: "hello.txt", MimeType: "text/plain"})
		if err != nil {
			return nil, err
		}
		embedded, err := mcp.EmbeddedText(ResourceHello, "text/plain", "Hello, world!")
		if err != nil {
			return nil, err
		}
		embedded.Annotations = &mcp.Annotations{Audience: []string{"assistant"}, LastModified: "2025-01-01T00:00:00Z"}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
			mcp.UserMessage(img), mcp.UserMessage(audio), mcp.AssistantMessage(link), mcp.UserMessage(embedded),
		}}, nil
	}, &registry.PromptOptions{Title: "Rich prompt", Icons: []mcp.Icon{{Src: "https://example.com/rich.png"}}, Meta: mcp.Meta{"example.com/kind": "demo"}}))
	must(reg.AddPrompt(&mcp.Prompt{Name: PromptBroken, Description: "Returns an invalid message."},
		func(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "system", Content: mcp.Text("nope")}}}, nil
		}, nil))
	return reg
}

// Names of the mutator tools AddCatalogTools registers.
const (
	ToolAddResource    = "add_resource"    // {"uri", "text"}: a static text resource
	ToolRemoveResource = "remove_resource" // {"uri"}
	ToolAddPrompt      = "add_prompt"      // {"name"}: a prompt without arguments
	ToolRemovePrompt   = "remove_prompt"   // {"name"}
	ToolAddTool        = "add_tool"        // {"name"}: a tool returning "ok"
	ToolTouch          = "touch"           // {"uri"}: NotifyResourceUpdated
)

// CatalogTools lists the mutator tools, sorted.
var CatalogTools = []string{ToolAddPrompt, ToolAddResource, ToolAddTool, ToolRemovePrompt, ToolRemoveResource, ToolTouch}

// URIArgs and NameArgs are the inputs of the mutator tools.
type (
	URIArgs struct {
		URI  string `json:"uri"`
		Text string `json:"text,omitempty"`
	}
	// NameArgs are the arguments of the catalog's name-taking test tools.
	NameArgs struct {
		Name string `json:"name"`
	}
)

// AddCatalogTools registers on reg the tools that change its catalog, so
// that transcripts can trigger list_changed and resources/updated
// notifications. Each returns "ok" or what went wrong.
func AddCatalogTools(reg *registry.Registry) {
	result := func(err error) (string, error) {
		if err != nil {
			return err.Error(), nil
		}
		return "ok", nil
	}
	found := func(ok bool) (string, error) {
		if !ok {
			return "not found", nil
		}
		return "ok", nil
	}
	registry.MustRegister(reg, ToolAddResource, "Adds a text resource.", func(_ context.Context, in URIArgs) (string, error) {
		return result(reg.AddTextResource(&mcp.Resource{URI: in.URI, Name: path.Base(in.URI)}, in.Text))
	}, nil)
	registry.MustRegister(reg, ToolRemoveResource, "Removes a resource.", func(_ context.Context, in URIArgs) (string, error) {
		return found(reg.RemoveResource(in.URI))
	}, nil)
	registry.MustRegister(reg, ToolAddPrompt, "Adds a prompt.", func(_ context.Context, in NameArgs) (string, error) {
		return result(reg.AddPrompt(&mcp.Prompt{Name: in.Name}, func(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text(in.Name))}}, nil
		}, nil))
	}, nil)
	registry.MustRegister(reg, ToolRemovePrompt, "Removes a prompt.", func(_ context.Context, in NameArgs) (string, error) {
		return found(reg.RemovePrompt(in.Name))
	}, nil)
	registry.MustRegister(reg, ToolAddTool, "Adds a tool.", func(_ context.Context, in NameArgs) (string, error) {
		return result(registry.Register(reg, in.Name, "Added.", func(context.Context, struct{}) (string, error) { return "ok", nil }, nil))
	}, nil)
	registry.MustRegister(reg, ToolTouch, "Reports an update of a resource.", func(_ context.Context, in URIArgs) (string, error) {
		reg.NotifyResourceUpdated(in.URI)
		return "ok", nil
	}, nil)
}

func ptr[T any](v T) *T { return &v }
