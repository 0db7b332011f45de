package browsertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// how the test is run, for the skip message.
const howToRun = "run .ci/apps-browser.sh (it installs Debian's chromium and the npm packages, checks the committed bundle and runs this test)"

// chromium returns the browser to drive: $KEEL_CHROMIUM, else chromium
// on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("KEEL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (set KEEL_CHROMIUM): " + howToRun)
	return ""
}

// startExample builds examples/apps and serves it over HTTP on a free
// loopback port; it returns the base URL.
func startExample(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "keel-apps")
	build := exec.Command("go", "build", "-o", bin, "./examples/apps")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./examples/apps: %s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cmd := exec.Command(bin, "-http", addr)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := make(chan string, 1)
	go func() { // the server's log, shown when the test fails
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		logs <- b.String()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("server log:\n%s", <-logs)
		}
	})
	base := "http://" + addr + "/"
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(base)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("examples/apps did not answer at %s: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowser drives the example host page in headless Chromium and checks
// each step of an MCP Apps round trip.
func TestBrowser(t *testing.T) {
	if os.Getenv("KEEL_BROWSER_TEST") == "" {
		t.Skip("KEEL_BROWSER_TEST is not set: " + howToRun)
	}
	exe := chromium(t)
	base := startExample(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(720, 640),
		// The view's iframe stays in the page's process, where the test
		// can read its document.
		chromedp.Flag("disable-features", "SitePerProcess,IsolateOrigins,IsolateSandboxedIframes"),
		chromedp.Flag("disable-site-isolation-trials", true),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	var (
		mu      sync.Mutex
		console []string
	)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		var line string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			line = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " "))
		case *runtime.EventExceptionThrown:
			line = fmt.Sprintf("exception: %s %s", ev.ExceptionDetails.Text, exceptionText(ev.ExceptionDetails))
		default:
			return
		}
		mu.Lock()
		console = append(console, line)
		mu.Unlock()
	}))
	hostLog := func() string {
		lines, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.hostLog || []`))
		return strings.Join(lines, "\n")
	}
	defer func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("host log:\n%s\nbrowser console:\n%s", hostLog(), strings.Join(console, "\n"))
		}
	}()

	// 1. The host connects, lists tools, calls the UI tool, reads the view
	// and renders it; the view initialises and gets input and result.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base)))
	require.NoError(t, waitFor(ctx, `window.hostState !== "starting"`), "the host page never became ready")
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.hostState`))
	require.NoError(t, err)
	require.Equal(t, "ready", state, "host log:\n%s", hostLog())

	log := hostLog()
	assert.Contains(t, log, "tools: inventory, restock")
	assert.Contains(t, log, "model sees: inventory\n", "the app-only tool is kept from the model")
	assert.Contains(t, log, "view ui://keel-inventory/table.html")
	assert.Contains(t, log, "connect-src 'none'", "the view declares no connect domains")
	assert.Contains(t, log, "view initialised")
	assert.Contains(t, log, "tool result sent: 4 items; text: 4 items in the north warehouse, shown in the table.", "the server saw a client that renders views")

	frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#view iframe")))
	require.NoError(t, err)
	require.Len(t, frames, 1)
	sandbox, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#view iframe"), "sandbox"))
	require.NoError(t, err)
	assert.Equal(t, "allow-scripts", sandbox.Value, "the view runs in an opaque origin")
	in := chromedp.FromNode(frames[0])

	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-state="rendered"]`), in)))
	csp, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`meta[http-equiv="Content-Security-Policy"]`), "content", in))
	require.NoError(t, err)
	assert.Contains(t, csp.Value, "default-src 'none'", "the view's document carries the host's CSP")
	assert.Contains(t, csp.Value, "connect-src 'none'")
	input, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#input"), in))
	require.NoError(t, err)
	assert.Equal(t, "Warehouse: north", input, "the view received the tool input")
	rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("#table tbody tr"), in))
	require.NoError(t, err)
	assert.Len(t, rows, 4, "the view rendered the tool result")

	// 2. Sorting is the view's own: by quantity, the low item comes first.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`th[data-key="qty"]`), in)))
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#table tbody tr:first-child td:first-child"), in))
	require.NoError(t, err)
	assert.Equal(t, "N-220", first)

	// 3. A button calls the app-only restock tool through the host, and the
	// answer reaches the view.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[data-sku="N-220"]`), in),
		chromedp.WaitVisible(chromedp.CSS(`body[data-restocked="N-220"]`), in),
	))
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status"), in))
	require.NoError(t, err)
	assert.Equal(t, "Restocked N-220: 13 in stock", status)
	qty, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-sku="N-220"] td.qty`), in))
	require.NoError(t, err)
	assert.Equal(t, "13", qty)
	log = hostLog()
	assert.Contains(t, log, `view calls restock {"sku":"N-220","amount":10}`)
	assert.Contains(t, log, `answer to the view: {"sku":"N-220","name":"Lock nuts M8","qty":13}`)

	// 4. The screenshot of the rendered view, kept as an artifact.
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	path := os.Getenv("KEEL_APPS_SCREENSHOT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "apps-view.png")
	}
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

// waitFor polls the page until expr is true.
func waitFor(ctx context.Context, expr string) error {
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out waiting for " + expr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
