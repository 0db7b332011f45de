// A minimal MCP Apps host page, written with the ext-apps host bridge
// (AppBridge): it connects to the keel server it is served from over
// streamable HTTP, declares the MCP Apps extension, lists the tools, calls
// the tool named in ?tool= (default inventory) with the JSON arguments in
// ?args=, reads the tool's ui:// view and renders it in a sandboxed iframe
// under the CSP the view declares, then hands the view the tool's input and
// result and forwards the view's tool calls to the server. Everything it
// does is logged on the page and in window.hostLog (the browser test reads
// it). Built into ../dist/host.js by build.mjs.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION_ID = "io.modelcontextprotocol/ui";
const hostInfo = { name: "keel-example-host", version: "1.0.0" };
window.hostLog = [];
window.hostState = "starting";

function log(line) {
  window.hostLog.push(line);
  document.getElementById("log").textContent += line + "\n";
}

// cspFor builds the iframe's Content-Security-Policy from the view's
// _meta.ui.csp: nothing beyond the view's own inline HTML unless listed.
function cspFor(csp = {}) {
  const list = (xs, fallback) => (xs && xs.length ? xs.join(" ") : fallback);
  const res = list(csp.resourceDomains, "");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${res}`.trim(),
    `style-src 'unsafe-inline' ${res}`.trim(),
    `img-src data: ${res}`.trim(),
    `font-src data: ${res}`.trim(),
    `media-src data: ${res}`.trim(),
    `connect-src ${list(csp.connectDomains, "'none'")}`,
    `frame-src ${list(csp.frameDomains, "'none'")}`,
    `base-uri ${list(csp.baseUriDomains, "'none'")}`,
  ].join("; ");
}

function withCSP(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  return /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (m) => m + meta) : meta + html;
}

async function main() {
  const params = new URLSearchParams(location.search);
  const toolName = params.get("tool") || "inventory";
  const args = JSON.parse(params.get("args") || '{"warehouse":"north"}');

  const client = new Client(hostInfo, {
    capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("mcp", location.href)));
  log(`connected to ${client.getServerVersion()?.name} (protocol ${client.getNegotiatedProtocolVersion?.() ?? "?"})`);

  const { tools } = await client.listTools();
  log(`tools: ${tools.map((t) => t.name).join(", ")}`);
  log(`model sees: ${tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name).join(", ")}`);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const tool = byName.get(toolName);
  if (!tool) throw new Error(`no tool ${toolName}`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`tool ${toolName} has no view`);

  const { contents } = await client.readResource({ uri });
  const view = contents[0];
  if (view.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} has MIME type ${view.mimeType}`);
  const meta = view._meta?.ui ?? {};
  const policy = cspFor(meta.csp);
  log(`view ${uri}: ${view.text.length} bytes; CSP ${policy}`);

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  const allow = buildAllowAttribute(meta.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  if (meta.prefersBorder) iframe.className = "border";
  iframe.title = tool.title || tool.name;
  iframe.srcdoc = withCSP(view.text, policy);
  document.getElementById("view").append(iframe);

  const bridge = new AppBridge(null, hostInfo, { serverTools: {}, logging: {}, sandbox: { csp: meta.csp, permissions: meta.permissions } }, {
    hostContext: { theme: "light", displayMode: "inline", platform: "web" },
  });
  // The view's tools/call requests: only tools visible to apps, forwarded
  // to the server.
  bridge.oncalltool = async (p) => {
    const t = byName.get(p.name);
    const vis = t?._meta?.ui?.visibility;
    if (!t || (vis && !vis.includes("app"))) throw new Error(`tool ${p.name} is not available to views`);
    log(`view calls ${p.name} ${JSON.stringify(p.arguments ?? {})}`);
    const res = await client.callTool(p);
    log(`answer to the view: ${JSON.stringify(res.structuredContent ?? res.content)}`);
    return res;
  };
  bridge.onsizechange = ({ height }) => {
    if (height) iframe.style.height = `${Math.min(Math.ceil(height), 1200)}px`;
  };
  bridge.oninitialized = async () => {
    try {
      log("view initialised");
      await bridge.sendToolInput({ arguments: args });
      log(`tool input sent: ${JSON.stringify(args)}`);
      const result = await client.callTool({ name: toolName, arguments: args });
      await bridge.sendToolResult(result);
      log(`tool result sent: ${(result.structuredContent?.items ?? []).length} items; text: ${result.content?.[0]?.text}`);
      window.hostState = "ready";
    } catch (err) {
      fail(err);
    }
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
}

function fail(err) {
  log(`error: ${err?.message ?? err}`);
  window.hostState = "failed";
}

main().catch(fail);
