// The Errors page before any event arrived: how to send the first one. The ingest URL of this
// server, where the ingest key comes from, and a curl command that works once the key is set.
import { html } from "../html.js";
import { CodeBlock, CopyButton } from "../components/copy.js";
import { ingestCurl, SdkSnippet } from "../components/snippets.js";

/** The curl command sending one test event to this server; the key comes from `$LOOKOUT_KEY`. */
export function curlCommand(origin) {
  const event = { level: "error", name: "Error", message: "Test event sent with curl", url: `${origin}/` };
  return ingestCurl(`${origin}/ingest/web-errors`, JSON.stringify({ events: [event] }));
}

export function FirstEventGuide({ onCheck }) {
  const origin = window.location.origin;
  const ingestUrl = `${origin}/ingest/web-errors`;
  return html`<section class="empty guide" aria-labelledby="first-event-title">
    <h2 id="first-event-title">No errors yet: send the first one</h2>
    <ol>
      <li><h3>The ingest URL</h3>
        <p>Browsers and scripts send errors to <code>${ingestUrl}</code> <${CopyButton} text=${ingestUrl} label="Copy ingest URL" /></p></li>
      <li><h3>An ingest key</h3>
        <p>Requests prove themselves with an ingest key in the <code>X-Lookout-Key</code> header. The keys are
          the server's <code>WEB_INGEST_KEYS</code> setting (or <code>WEB_INGEST_KEY</code>): at least 16
          characters of letters, digits, <code>_</code> and <code>-</code>, set in the environment or the
          configuration file and read at start (docs/configuration.md, "Browser ingest"). Without one, ingest
          answers 401.</p></li>
      <li><h3>A test event</h3>
        <p>Put the key in <code>LOOKOUT_KEY</code> and run:</p>
        <${CodeBlock} code=${curlCommand(origin)} label="Copy curl command" />
        <p>The server answers <code>202</code> with <code>"accepted":1</code>, and the error shows here within a second.</p></li>
      <li><h3>Your pages</h3><${SdkSnippet} /></li>
    </ol>
    <button type="button" class="primary" onClick=${onCheck}>Check for errors</button>
  </section>`;
}
