// Package browsertest runs the MCP Apps example in a real browser: headless
// Chromium loads the example host page, which connects to examples/apps
// over streamable HTTP, renders the inventory view in a sandboxed iframe
// and forwards the view's tool calls. It is a module of its own so that
// its browser driver (github.com/chromedp/chromedp) stays out of keel's
// module graph. Run it with .ci/apps-browser.sh.
package browsertest
