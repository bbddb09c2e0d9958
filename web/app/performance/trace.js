// One trace (`/performance/traces/{id}`) as a waterfall: one row per span in tree order, its name
// indented by depth, a bar placed by its start within the trace and sized by its duration, its
// status and service; choosing a span shows its attributes. Spans sent with a browser session
// link to it.
import { useMemo, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { useListKeys } from "../components/keyboard.js";
import { Time, duration } from "../components/time.js";

/** The spans of a tree, parents before children and siblings in start order, with their depth. */
function flatten(roots) {
  const rows = [];
  const visit = (span, depth) => {
    rows.push({ span, depth });
    for (const child of span.children || []) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return rows;
}

/** A span status is a word or an object with a `code` (and maybe a `message`). */
const statusWord = (status) => (status && typeof status === "object" ? String(status.code ?? status.message ?? "") : status || "");
const failed = (status) => /^(error|status_code_error|2)$/i.test(statusWord(status));

/** Where each row's bar goes, as percentages of the whole trace (at least a sliver wide). */
function placed(rows) {
  const starts = rows.map(({ span }) => Date.parse(span.start_time));
  const ends = rows.map(({ span }) => Date.parse(span.end_time));
  const start = Math.min(...starts);
  const total = Math.max(Math.max(...ends) - start, 1);
  return {
    start, total,
    rows: rows.map((row, i) => ({ ...row, left: ((starts[i] - start) / total) * 100, width: Math.max((row.span.duration_ms / total) * 100, 0.4) })),
  };
}

function SpanRow({ row, selected, onSelect }) {
  const { span, depth } = row;
  const word = statusWord(span.status);
  return html`<tr class=${selected ? "active" : ""} data-depth=${depth} aria-selected=${selected ? "true" : undefined}>
    <td class="span-name">
      <span class="indent" style=${{ paddingLeft: `${depth * 16}px` }}>
        <button type="button" class="link" aria-expanded=${selected ? "true" : "false"} onClick=${() => onSelect(selected ? null : span.span_id)}>${span.name}</button>
      </span>
    </td>
    <td>${span.service}</td>
    <td>${word ? html`<${StatusPill} status=${failed(span.status) ? "failed" : word} />` : "—"}</td>
    <td class="number">${duration(span.duration_ms)}</td>
    <td class="waterfall-cell"><div class="waterfall-track">
      <span class=${`waterfall-bar${failed(span.status) ? " failed" : ""}`} style=${{ left: `${row.left}%`, width: `${row.width}%` }}></span>
    </div></td>
  </tr>`;
}

function Attributes({ span }) {
  const entries = Object.entries(span.attributes || {});
  const facts = [["Span id", span.span_id], ["Parent", span.parent_span_id || "none (a root)"], ["Kind", span.kind || "—"],
    ["Started", span.start_time], ["Ended", span.end_time], ["Environment", span.environment || "—"],
    ["Status", span.status ? JSON.stringify(span.status) : "—"]];
  return html`<${Panel} title=${`Span: ${span.name}`} id="panel-span">
    <dl class="record">${facts.map(([label, value]) => html`<dt>${label}</dt><dd class="mono">${value}</dd>`)}</dl>
    <h3 class="attributes-title">Attributes</h3>
    ${entries.length ? html`<dl class="record attributes">${entries.map(([key, value]) => html`<dt class="mono">${key}</dt>
      <dd class="mono">${typeof value === "string" ? value : JSON.stringify(value)}</dd>`)}</dl>`
      : html`<p class="meta">This span has no attributes.</p>`}
  </${Panel}>`;
}

function Waterfall({ trace }) {
  const [chosen, setChosen] = useState(null);
  const layout = useMemo(() => placed(flatten(trace.spans)), [trace]);
  const sessions = [...new Set(layout.rows.map(({ span }) => span.session_id).filter(Boolean))];
  const errors = layout.rows.filter(({ span }) => failed(span.status)).length;
  const services = [...new Set(layout.rows.map(({ span }) => span.service))];
  const selected = layout.rows.find(({ span }) => span.span_id === chosen);
  // j/k move the selection through the spans (their attributes follow).
  const index = layout.rows.findIndex(({ span }) => span.span_id === chosen);
  useListKeys(layout.rows.length, index, (next) => setChosen(layout.rows[next].span.span_id));
  return html`<div>
    <${Facts} facts=${[
      ["Started", html`<${Time} at=${new Date(layout.start).toISOString()} absolute />`], ["Duration", duration(layout.total)],
      ["Spans", layout.rows.length], ["Errors", errors], ["Services", services.join(", ")],
      ...(sessions.length ? [["Session", html`${sessions.map((id, i) => html`${i ? ", " : ""}<a href=${`/sessions/${encodeURIComponent(id)}`}>${id}</a>`)}`]] : []),
    ]} />
    <${Panel} title="Waterfall" actions=${html`<span class="meta">Choose a span (or press j and k) to see its attributes.</span>`}>
      <table class="waterfall">
        <caption class="visually-hidden">Spans of the trace in order, indented by depth, with their place in time</caption>
        <thead><tr><th scope="col">Span</th><th scope="col">Service</th><th scope="col">Status</th>
          <th scope="col" class="number">Duration</th><th scope="col" class="waterfall-cell">0 – ${duration(layout.total)}</th></tr></thead>
        <tbody>${layout.rows.map((row) => html`<${SpanRow} key=${row.span.span_id} row=${row}
          selected=${row.span.span_id === chosen} onSelect=${setChosen} />`)}</tbody>
      </table>
    </${Panel}>
    ${selected && html`<${Attributes} span=${selected.span} />`}
  </div>`;
}

export default function TracePage({ params }) {
  const trace = useLoad((signal) => api(`/api/v1/traces/${encodeURIComponent(params.id)}`, { signal }), [params.id]);
  return html`<div>
    <${PageHeader} title=${`Trace ${params.id}`} />
    <p class="meta"><a href="/performance">Performance</a></p>
    <${LoadProblem} problem=${trace.problem} retry=${trace.problem && trace.problem.status !== 404 ? trace.reload : null} />
    ${trace.data && html`<${Waterfall} trace=${trace.data} />`}
  </div>`;
}
