// The Ingest settings page (`/settings/ingest`): where browsers and scripts send data (the
// ingest URLs built from the server's base URL), how ingest keys are set (the environment or
// the configuration file: this page never shows a key, the server does not give it), the
// allowed origins and limits, the browser SDK's script tag (versioned, with its SRI hash), and
// ready-to-run curl commands for an error and a source map.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { CodeBlock, CopyButton } from "../components/copy.js";
import { SettingsFrame } from "./frame.js";
import { ingestCurl, SdkSnippet } from "../components/snippets.js";

const ROUTES = [
  ["web_errors", "POST", "Errors and warnings"], ["web_sessions", "POST", "Browser sessions"],
  ["spans", "POST", "Spans (traces)"], ["sourcemaps", "POST", "Source maps (also a member's API key)"],
  ["ab_config", "GET", "Flags and experiments for the SDK"], ["ab_uniques", "POST", "Experiment exposures"],
];

const bytes = (n) => (n >= 1048576 ? `${Math.round(n / 1048576)} MiB` : `${Math.round(n / 1024)} KiB`);

function errorCommand(url) {
  const event = { level: "error", name: "Error", message: "Test event sent with curl", url: `${window.location.origin}/`, service: "web" };
  return ingestCurl(url, JSON.stringify({ events: [event] }));
}

function sourcemapCommand(url) {
  return [`curl -X POST '${url}' \\`, "  -H \"X-Lookout-Key: $LOOKOUT_KEY\" \\", "  -F release=1.4.2 \\",
    "  -F file=https://app.example.com/assets/app.min.js \\", "  -F sourcemap=@dist/app.min.js.map"].join("\n");
}

function Keys({ settings }) {
  const count = settings.keys_configured;
  return html`<div>
    <p>${count === 0
      ? html`<span class="pill pill-error">No key</span> No ingest key is set, so ingest refuses every request (401).`
      : html`<span class="pill pill-ok">${count === 1 ? "1 key" : `${count} keys`}</span> ${count === 1 ? "One ingest key is set." : `${count} ingest keys are set; any of them is accepted.`}`}</p>
    <p>Requests carry a key in the <code>X-Lookout-Key</code> header. Keys are set on the server, in the environment
      (<code>WEB_INGEST_KEY</code> for one, <code>WEB_INGEST_KEYS</code> for a comma list, to rotate) or in the
      configuration file (<code>web_ingest_keys</code>), and read at start: at least 16 characters of letters,
      digits, <code>_</code> and <code>-</code>. Lookout never shows them here; ask whoever runs the server.</p>
    ${!settings.receives_this_org && html`<p class="notice">Ingested data goes to another organisation on this server
      (<code>WEB_INGEST_ORG_ID</code>), not to this one.</p>`}
  </div>`;
}

function Origins({ settings }) {
  const any = settings.allowed_origins.length === 1 && settings.allowed_origins[0] === "*";
  return html`<div>
    <p>${any ? "Browsers on any site may send data (WEB_INGEST_ALLOWED_ORIGINS is *)."
      : "Browsers may send data from these sites only (WEB_INGEST_ALLOWED_ORIGINS):"}</p>
    ${!any && html`<ul class="plain-list mono">${settings.allowed_origins.map((origin) => html`<li key=${origin}>${origin}</li>`)}</ul>`}
    <dl class="record">
      <dt>Body size</dt><dd>${bytes(settings.max_body_bytes)} per request (source maps ${bytes(settings.max_sourcemap_bytes)})</dd>
      <dt>Items</dt><dd>${settings.max_events} per request</dd>
      <dt>Rate</dt><dd>${settings.rate_per_min} requests a minute per client address</dd>
      <dt>Scrubbing</dt><dd>${settings.scrub_pii ? "personal data (e-mails, tokens, card numbers) replaced before storing" : "personal data kept as sent"};
        client addresses ${settings.scrub_ip ? "not stored" : "stored"}</dd>
    </dl>
  </div>`;
}

export default function IngestPage() {
  const loaded = useLoad((signal) => api("/api/v1/ingest-settings", { signal }), []);
  const settings = loaded.data;
  return html`<${SettingsFrame} current="ingest">
    <${PageHeader} title="Ingest" />
    <${LoadProblem} problem=${loaded.problem} retry=${loaded.reload} />
    ${settings && html`<div class="narrow">
      <${Panel} title="Ingest URLs">
        <table>
          <caption class="visually-hidden">Ingest URLs</caption>
          <thead><tr><th scope="col">What</th><th scope="col">Method</th><th scope="col">URL</th><th scope="col"><span class="visually-hidden">Copy</span></th></tr></thead>
          <tbody>${ROUTES.map(([key, method, what]) => html`<tr key=${key}>
            <td>${what}</td><td class="mono">${method}</td><td class="mono url-cell">${settings.urls[key]}</td>
            <td><${CopyButton} text=${settings.urls[key]} label="Copy URL" /></td></tr>`)}</tbody>
        </table>
        <p class="meta">Built from the server's base URL, <code>${settings.base_url}</code> (<code>BASE_URL</code>).</p>
      <//>
      <${Panel} title="Browser SDK"><${SdkSnippet} /><//>
      <${Panel} title="Ingest keys"><${Keys} settings=${settings} /><//>
      <${Panel} title="Origins and limits"><${Origins} settings=${settings} /><//>
      <${Panel} title="Try it">
        <p>Put an ingest key in <code>LOOKOUT_KEY</code>, then send a test error (answered <code>202</code>):</p>
        <${CodeBlock} code=${errorCommand(settings.urls.web_errors)} label="Copy error command" />
        <p>Upload the source map of a release, so stacks show the original files and lines:</p>
        <${CodeBlock} code=${sourcemapCommand(settings.urls.sourcemaps)} label="Copy source map command" />
      <//>
    </div>`}
  <//>`;
}
