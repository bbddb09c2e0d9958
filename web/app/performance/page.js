// The Performance page: span names with their count and p50/p95/p99 durations (sortable), for a
// service, environment and time range kept in the URL; choosing a name shows its percentiles
// over time as a chart and its recent traces, each opening as a waterfall. Before the first
// span, a guide to sending one.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { html } from "../html.js";
import { ingestCurl } from "../components/snippets.js";
import { api } from "../api.js";
import { navigate, setQuery } from "../router.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Select } from "../components/form.js";
import { Time, duration } from "../components/time.js";
import { TimeChart } from "../components/chart.js";
import { CursorPaging } from "../components/paging.js";
import { CodeBlock, CopyButton } from "../components/copy.js";
import { RANGE_OPTIONS, rangeStart, knownRange } from "../components/range.js";
import { useServiceOptions } from "../components/services.js";
import { useListKeys } from "../components/keyboard.js";

// Percentiles need a window: the presets only, the last 24 hours unless the URL says otherwise.
const RANGES = RANGE_OPTIONS.filter(([value]) => value);
// Unchanging inputs of TimeChart, so a re-render does not redraw it.
const NONE = [];
const COLUMNS = [["name", "Span name"], ["count", "Spans"], ["p50_ms", "p50"], ["p95_ms", "p95"], ["p99_ms", "p99"]];

function readFilters(query) {
  const sort = COLUMNS.some(([key]) => key === query.get("sort")) ? query.get("sort") : "count";
  return {
    service: query.get("service") || "", environment: query.get("environment") || "",
    range: knownRange(query.get("range") || "") || "24h", name: query.get("name") || "",
    sort, order: query.get("order") === "asc" ? "asc" : "desc", cursor: query.get("cursor") || "",
  };
}

/** The API filters every panel of the page shares. */
const shared = (f) => ({ service: f.service, environment: f.environment, from: rangeStart(f.range) });

/** The curl command sending one span to this server; the key comes from `$LOOKOUT_KEY`. */
function curlCommand(origin) {
  const span = `{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","name":"GET /checkout",`
    + `"start_time":'"$(date +%s000)"',"duration_ms":120,"service":"web","environment":"production","status":"ok"}`;
  return ingestCurl(`${origin}/ingest/spans`, `{"spans":[${span}]}`);
}

function FirstSpanGuide({ onCheck }) {
  const origin = window.location.origin;
  const ingestUrl = `${origin}/ingest/spans`;
  return html`<section class="empty guide" aria-labelledby="first-span-title">
    <h2 id="first-span-title">No spans yet: send the first one</h2>
    <ol>
      <li><h3>The ingest URL</h3>
        <p>Browsers and services send spans to <code>${ingestUrl}</code> <${CopyButton} text=${ingestUrl} label="Copy ingest URL" /></p></li>
      <li><h3>An ingest key</h3>
        <p>Requests carry an ingest key in the <code>X-Lookout-Key</code> header: one of the server's <code>WEB_INGEST_KEYS</code>
          (or <code>WEB_INGEST_KEY</code>), set in the environment or the configuration file.</p></li>
      <li><h3>A test span</h3>
        <p>Put the key in <code>LOOKOUT_KEY</code> and run (each span names its trace, its parent and its service):</p>
        <${CodeBlock} code=${curlCommand(origin)} label="Copy curl command" />
        <p>The server answers <code>202</code> with <code>"accepted":1</code>, and the span's name shows here.</p></li>
    </ol>
    <button type="button" class="primary" onClick=${onCheck}>Check for spans</button>
  </section>`;
}

function FilterBar({ filters }) {
  const { services, environments } = useServiceOptions(filters);
  const pick = (name) => (value) => setQuery({ [name]: value, cursor: null }, { replace: false });
  return html`<form class="filters" aria-label="Span filters" onSubmit=${(event) => event.preventDefault()}>
    <${Select} label="Service" value=${filters.service} options=${services} onChange=${pick("service")} />
    <${Select} label="Environment" value=${filters.environment} options=${environments} onChange=${pick("environment")} />
    <${Select} label="Time range" value=${filters.range} options=${RANGES} onChange=${(v) => pick("range")(v === "24h" ? "" : v)} />
  </form>`;
}

function sorted(items, { sort, order }) {
  const sign = order === "asc" ? 1 : -1;
  const compare = sort === "name" ? (a, b) => a.name.localeCompare(b.name) : (a, b) => a[sort] - b[sort];
  return [...items].sort((a, b) => sign * compare(a, b) || a.name.localeCompare(b.name));
}

/** A column heading that sorts the table by itself (a second press reverses the order). */
function SortHeading({ column, text, filters }) {
  const on = filters.sort === column;
  const next = on && filters.order === "desc" ? "asc" : "desc";
  const ariaSort = on ? (filters.order === "asc" ? "ascending" : "descending") : undefined;
  return html`<th scope="col" class=${column === "name" ? "" : "number"} aria-sort=${ariaSort}>
    <button type="button" class="link sort" onClick=${() => setQuery({ sort: column === "count" ? null : column, order: next === "desc" ? null : next })}>
      ${text}${on ? (filters.order === "asc" ? " ↑" : " ↓") : ""}</button></th>`;
}

function nameLink(name) {
  const query = new URLSearchParams(window.location.search);
  query.set("name", name);
  query.delete("cursor");
  return `/performance?${query}`;
}

function SpanTable({ items, filters }) {
  const rows = useMemo(() => sorted(items, filters), [items, filters.sort, filters.order]);
  const [active, setActive] = useState(-1);
  const links = useRef([]);
  useEffect(() => { if (active >= 0 && links.current[active]) links.current[active].focus(); }, [active]);
  useListKeys(rows.length, active, setActive, { open: (index) => navigate(nameLink(rows[index].name)) });
  return html`<table class="span-table">
    <caption class="visually-hidden">Span names with their durations</caption>
    <thead><tr>${COLUMNS.map(([column, text]) => html`<${SortHeading} column=${column} text=${text} filters=${filters} />`)}</tr></thead>
    <tbody>${rows.map((row, index) => html`<tr key=${row.name} class=${index === active ? "active" : ""} aria-selected=${row.name === filters.name ? "true" : undefined}>
      <td><a class="cell-link mono" href=${nameLink(row.name)} ref=${(element) => { links.current[index] = element; }}
        aria-current=${row.name === filters.name ? "true" : undefined}>${row.name}</a></td>
      <td class="number">${row.count.toLocaleString()}</td>
      <td class="number">${duration(row.p50_ms)}</td>
      <td class="number">${duration(row.p95_ms)}</td>
      <td class="number">${duration(row.p99_ms)}</td>
    </tr>`)}</tbody>
  </table>`;
}

/** A bucket width in seconds as a person says it: "15 min", "1 h", "1 day". */
function bucketWords(seconds) {
  if (seconds % 86400 === 0) return seconds === 86400 ? "day" : `${seconds / 86400} days`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

function PercentileChart({ filters }) {
  const series = useLoad((signal) => api("/api/v1/spans/series", { signal, query: { ...shared(filters), name: filters.name } }),
    [filters.name, filters.service, filters.environment, filters.range]);
  const lines = useMemo(() => {
    const points = (series.data && series.data.points) || [];
    return {
      times: points.map((p) => Date.parse(p.at)),
      lines: [["p50", "p50_ms"], ["p95", "p95_ms"], ["p99", "p99_ms"]].map(([label, key]) => ({ label, values: points.map((p) => p[key]) })),
      count: points.reduce((sum, p) => sum + p.count, 0),
    };
  }, [series.data]);
  // Deployments of the page's service (all services when none is chosen), as markers.
  const deployments = useLoad((signal) => api("/api/v1/deployments", { signal, query: { from: rangeStart(filters.range), limit: 100 } }),
    [filters.range]);
  const markers = useMemo(() => ((deployments.data && deployments.data.items) || [])
    .filter((d) => !filters.service || d.service === filters.service)
    .map((d) => ({ at: Date.parse(d.started_at), label: `${d.service} ${d.version} (${d.environment})` })), [deployments.data, filters.service]);
  const every = series.data ? `one point every ${bucketWords(series.data.interval_seconds)}` : "";
  return html`<${Panel} title=${`Percentiles over time: ${filters.name}`} id="panel-percentiles" actions=${html`<span class="meta">${every}</span>`}>
    <${LoadProblem} problem=${series.problem} retry=${series.reload} />
    ${series.data && html`<${TimeChart} times=${lines.times} lines=${lines.lines} counts=${NONE} markers=${markers} seriesLabel="ms"
      label=${`p50, p95 and p99 durations of ${filters.name} over time, in milliseconds: ${lines.count} spans`} />`}
  </${Panel}>`;
}

function RecentTraces({ filters }) {
  const traces = useLoad((signal) => api("/api/v1/traces", { signal, query: { ...shared(filters), name: filters.name, cursor: filters.cursor, limit: 20 } }),
    [filters.name, filters.service, filters.environment, filters.range, filters.cursor]);
  const items = (traces.data && traces.data.items) || [];
  return html`<${Panel} title=${`Recent traces: ${filters.name}`} id="panel-traces">
    <${LoadProblem} problem=${traces.problem} retry=${traces.reload} />
    ${traces.data && !items.length && html`<p class="meta">No trace with this span in the time range.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Recent traces holding ${filters.name}</caption>
      <thead><tr><th scope="col">Trace</th><th scope="col">Root span</th><th scope="col">Service</th><th scope="col" class="number">Duration</th>
        <th scope="col" class="number">Spans</th><th scope="col" class="number">Errors</th><th scope="col">When</th></tr></thead>
      <tbody>${items.map((trace) => html`<tr key=${trace.trace_id}>
        <td><a class="cell-link mono" href=${`/performance/traces/${trace.trace_id}`}>${trace.trace_id}</a></td>
        <td class="span-name">${trace.root_name}</td>
        <td>${trace.service}</td>
        <td class="number">${duration(trace.duration_ms)}</td>
        <td class="number">${trace.span_count}</td>
        <td class="number">${trace.error_count ? html`<span class="pill pill-error">${trace.error_count}</span>` : 0}</td>
        <td><${Time} at=${trace.started_at} /></td>
      </tr>`)}</tbody></table>`}
    ${traces.data && html`<${CursorPaging} cursor=${filters.cursor} nextCursor=${traces.data.next_cursor} label="Trace pages" />`}
  </${Panel}>`;
}

async function loadNames(filters, signal) {
  const answer = await api("/api/v1/spans", { signal, query: { ...shared(filters), limit: 500 } });
  // Nothing in this window and no filter: has any span ever arrived? If not, teach how to send one.
  if (!answer.items.length && !filters.service && !filters.environment) {
    const any = await api("/api/v1/spans", { signal, query: { limit: 1 } });
    answer.neverSent = !any.items.length;
  }
  return answer;
}

export default function PerformancePage({ query }) {
  const filters = readFilters(query);
  const names = useLoad((signal) => loadNames(filters, signal), [filters.service, filters.environment, filters.range]);
  const data = names.data;
  return html`<div>
    <${PageHeader} title="Performance" />
    <${FilterBar} filters=${filters} />
    <${LoadProblem} problem=${names.problem} retry=${names.reload} />
    ${data && data.neverSent && html`<${FirstSpanGuide} onCheck=${names.reload} />`}
    ${data && !data.neverSent && !data.items.length && html`<div class="empty"><p>No spans in this time range for these filters.</p></div>`}
    ${data && data.items.length > 0 && html`<${Panel} title="Span names" actions=${html`<span class="meta">${data.items.length} names${data.next_cursor ? " (the first 500)" : ""}</span>`}>
      ${!filters.name && html`<p class="meta">Choose a span name to see its percentiles over time and its recent traces.</p>`}
      <${SpanTable} items=${data.items} filters=${filters} /></${Panel}>`}
    ${filters.name && html`<${PercentileChart} filters=${filters} /><${RecentTraces} filters=${filters} />`}
  </div>`;
}
