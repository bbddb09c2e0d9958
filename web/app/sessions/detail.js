// One browser session (`/sessions/{id}`): its facts, the errors it met (each linking to its
// error group) and the traces its pages started.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time, duration } from "../components/time.js";

function Errors({ errors }) {
  if (!errors.length) return html`<p class="meta">No error events named this session.</p>`;
  return html`<table><thead><tr><th scope="col">Time</th><th scope="col">Error</th><th scope="col">Page</th></tr></thead>
    <tbody>${errors.map((event) => html`<tr key=${event.id}>
      <td><${Time} at=${event.timestamp} /></td>
      <td>${event.group_id ? html`<a class="cell-link" href=${`/errors/${encodeURIComponent(event.group_id)}`}>${event.name ? `${event.name}: ` : ""}${event.message}</a>` : event.message}</td>
      <td class="mono url-cell">${event.url}</td>
    </tr>`)}</tbody></table>`;
}

/** A span status is a word or an object with a `code`. */
const statusWord = (status) => (status && typeof status === "object" ? status.code || status.message || "" : status || "");

function Traces({ traces }) {
  if (!traces) return html`<p class="meta">This server does not report a session's traces.</p>`;
  if (!traces.length) return html`<p class="meta">No spans named this session.</p>`;
  return html`<table><thead><tr><th scope="col">Trace</th><th scope="col">Started</th><th scope="col" class="number">Duration</th>
    <th scope="col" class="number">Spans</th><th scope="col">Status</th></tr></thead>
    <tbody>${traces.map((trace) => html`<tr key=${trace.trace_id}>
      <td><a href=${`/performance/traces/${trace.trace_id}`}>${trace.name}</a><div class="meta mono">${trace.trace_id}</div></td>
      <td><${Time} at=${trace.started_at} /></td>
      <td class="number">${duration(trace.duration_ms)}</td>
      <td class="number">${trace.span_count}</td>
      <td>${statusWord(trace.status) ? html`<${StatusPill} status=${statusWord(trace.status)} />` : "—"}</td>
    </tr>`)}</tbody></table>`;
}

export default function SessionPage({ params }) {
  const session = useLoad((signal) => api(`/api/v1/sessions/${encodeURIComponent(params.id)}`, { signal }), [params.id]);
  const data = session.data;
  return html`<div>
    <${PageHeader} title=${`Session ${params.id}`} />
    <${LoadProblem} problem=${session.problem} retry=${session.reload} />
    ${data && html`<${Facts} facts=${[
      ["Started", html`<${Time} at=${data.started_at} absolute />`], ["Duration", duration(data.duration_ms)],
      ["Page views", data.page_views ?? "—"], ["Errors", data.errors.length], ["Release", data.release || "—"],
      ["Service", [data.service, data.environment].filter(Boolean).join(" · ") || "—"], ["User", data.user_id || "—"],
    ]} />
    <p class="meta">Landed on <span class="mono">${data.url}</span>${data.referrer ? html` from <span class="mono">${data.referrer}</span>` : ""}${data.user_agent ? ` · ${data.user_agent}` : ""}</p>
    <${Panel} title="Errors"><${Errors} errors=${data.errors} /></${Panel}>
    <${Panel} title="Traces"><${Traces} traces=${data.traces} /></${Panel}>`}
  </div>`;
}
