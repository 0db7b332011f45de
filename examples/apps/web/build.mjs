// Builds the view and the test host page of examples/apps into ../dist:
//
//   dist/view.html  the view: view.html with view.js and its dependencies
//                   (the ext-apps App SDK) bundled inline, minified
//   dist/host.html  the example host page
//   dist/host.js    its script: host.js with the MCP client and the ext-apps
//                   host bridge, bundled and minified
//
// (or into $APPS_DIST when it is set).
// The output depends only on these sources and the versions pinned in
// package-lock.json: .ci/apps-browser.sh rebuilds it and fails when it
// differs from the committed files. Run: npm ci && node build.mjs
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = process.env.APPS_DIST || join(here, "..", "dist"); // APPS_DIST: build elsewhere (the CI's check)
mkdirSync(dist, { recursive: true });

// zod re-exports every locale as a namespace, which defeats tree shaking:
// the bundles keep English messages only (a third of the view's size).
const englishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${"node_modules"}/zod/`) ? { path: join(dirname(args.importer), "..", "locales", "index.js"), namespace: "zod-locales" } : undefined);
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(join(dirname(args.path), "en.js"))};`,
      resolveDir: dirname(args.path),
    }));
  },
};

const common = {
  plugins: [englishOnly],
  bundle: true,
  minify: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  legalComments: "eof",
  write: false,
  logLevel: "warning",
};

const view = await build({ ...common, entryPoints: [join(here, "view.js")] });
const script = view.outputFiles[0].text.replace(/<\/(script)/gi, "<\\/$1");
const page = readFileSync(join(here, "view.html"), "utf8");
if (!page.includes("<!-- VIEW_SCRIPT -->")) throw new Error("view.html lacks the <!-- VIEW_SCRIPT --> marker");
writeFileSync(join(dist, "view.html"), page.replace("<!-- VIEW_SCRIPT -->", () => `<script>${script}</script>`));

await build({ ...common, entryPoints: [join(here, "host.js")], write: true, outfile: join(dist, "host.js") });
copyFileSync(join(here, "host.html"), join(dist, "host.html"));

for (const f of ["view.html", "host.html", "host.js"]) {
  console.log(`dist/${f}: ${readFileSync(join(dist, f)).length} bytes`);
}
