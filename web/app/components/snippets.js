// Ready-to-paste ways of sending data to this server: a curl command for an ingest route, and
// the browser SDK's script tag pinned to this build's versioned file with its SRI hash (read
// from `/sdk/manifest.json`, so the snippet always matches the file the server serves).
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "./load.js";
import { LoadProblem } from "./page.js";
import { CodeBlock } from "./copy.js";

/** A curl command posting `body` (a JSON text) to `url`, the key coming from `$LOOKOUT_KEY`. */
export function ingestCurl(url, body) {
  return [
    `curl -X POST '${url}' \\`,
    "  -H 'Content-Type: application/json' \\",
    "  -H \"X-Lookout-Key: $LOOKOUT_KEY\" \\",
    `  -d '${body}'`,
  ].join("\n");
}

/** The script tag and `Lookout.init` call for a page, and the same as an ES module import. */
export function sdkSnippets(manifest, origin) {
  const file = (name) => manifest.files.find((entry) => entry.name === name);
  const classic = file("lookout.iife.js");
  const module = file("lookout.js");
  const init = `  endpoint: "${origin}",\n  key: "<ingest key>",\n  release: "1.0.0",\n  environment: "production",`;
  return {
    script: `<script src="${origin}${classic.path}"\n        integrity="${classic.integrity}" crossorigin="anonymous"></script>\n`
      + `<script>\n  Lookout.init({\n${init.replace(/^/gm, "  ")}\n  });\n</script>`,
    module: `import * as Lookout from "${origin}${module.path}";\n\nLookout.init({\n${init}\n});`,
  };
}

/** The browser SDK snippets of this server, with its version. */
export function SdkSnippet() {
  const loaded = useLoad((signal) => api("/sdk/manifest.json", { signal, anonymous: true }), []);
  if (loaded.problem) return html`<${LoadProblem} problem=${loaded.problem} retry=${loaded.reload} />`;
  if (!loaded.data) return html`<p class="meta" role="status">Loading the SDK's details…</p>`;
  const snippets = sdkSnippets(loaded.data, window.location.origin);
  return html`<div>
    <p>Add the browser SDK (version ${loaded.data.version}) to every page: it reports errors, sessions, page loads and
      requests, and reads flags and experiments. The file is pinned with its SRI hash, so the browser refuses any
      other content.</p>
    <${CodeBlock} code=${snippets.script} label="Copy script tag" />
    <p>Or, in code bundled as ES modules:</p>
    <${CodeBlock} code=${snippets.module} label="Copy module import" />
  </div>`;
}
