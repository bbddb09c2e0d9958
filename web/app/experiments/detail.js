// One experiment (`/experiments/{key}`): its state and variants, and its daily unique visitors
// per variant as a chart and a table, for the days between `from` and `to` (YYYY-MM-DD, UTC)
// kept in the URL.
import { useMemo } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { setQuery } from "../router.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { TimeChart } from "../components/chart.js";

// Unchanging inputs of TimeChart, so a re-render does not redraw it.
const NONE = [];
const DAY_MS = 864e5;
const MAX_DAYS = 400;
const isDay = (text) => /^\d{4}-\d{2}-\d{2}$/.test(text || "");

/** Every day from the first to the last (the range asked, else the data's), at most MAX_DAYS. */
function daysBetween(first, last) {
  const days = [];
  for (let at = Date.parse(`${first}T00:00:00Z`); at <= Date.parse(`${last}T00:00:00Z`) && days.length < MAX_DAYS; at += DAY_MS) {
    days.push(new Date(at).toISOString().slice(0, 10));
  }
  return days;
}

/** The visitors per variant of each day in the range, days with none counted 0. */
function tabulate(results, experiment, range) {
  const byDay = new Map(results.days.map((day) => [day.day, day.variants]));
  const seen = results.days.flatMap((day) => Object.keys(day.variants));
  const variants = [...new Set([...experiment.variants.map((v) => v.key), ...seen])];
  const known = results.days.map((day) => day.day).filter((day) => (!range.from || day >= range.from) && (!range.to || day <= range.to));
  const first = range.from || known[0];
  const last = range.to || known[known.length - 1];
  const days = first && last ? daysBetween(first, last) : [];
  const rows = days.map((day) => ({ day, counts: variants.map((variant) => (byDay.get(day) || {})[variant] || 0) }));
  return { variants, rows };
}

function RangeBar({ range }) {
  const pick = (name) => (event) => setQuery({ [name]: event.currentTarget.value || null }, { replace: false });
  return html`<form class="filters" aria-label="Days" onSubmit=${(event) => event.preventDefault()}>
    <div class="field"><label for="results-from">From (UTC day)</label><input id="results-from" type="date" value=${range.from} onChange=${pick("from")} /></div>
    <div class="field"><label for="results-to">To (UTC day)</label><input id="results-to" type="date" value=${range.to} onChange=${pick("to")} /></div>
    ${(range.from || range.to) && html`<button type="button" onClick=${() => setQuery({ from: null, to: null }, { replace: false })}>All days</button>`}
  </form>`;
}

function Results({ table, experimentKey }) {
  const chart = useMemo(() => ({
    times: table.rows.map((row) => Date.parse(`${row.day}T00:00:00Z`)),
    lines: table.variants.map((variant, index) => ({ label: variant, values: table.rows.map((row) => row.counts[index]) })),
  }), [table]);
  if (!table.rows.length) {
    return html`<p class="meta">No exposures in these days. Browsers report them to <code>/ingest/ab-uniques</code>; a visitor counts once per variant and UTC day.</p>`;
  }
  const totals = table.variants.map((_, index) => table.rows.reduce((sum, row) => sum + row.counts[index], 0));
  return html`<div>
    <${TimeChart} times=${chart.times} lines=${chart.lines} counts=${NONE} markers=${NONE} seriesLabel="visitors"
      label=${`Daily unique visitors of ${experimentKey} per variant: ${table.variants.map((v, i) => `${v} ${totals[i]}`).join(", ")}`} />
    <table class="results-table">
      <caption class="visually-hidden">Daily unique visitors per variant</caption>
      <thead><tr><th scope="col">Day (UTC)</th>${table.variants.map((variant) => html`<th scope="col" class="number">${variant}</th>`)}</tr></thead>
      <tbody>${[...table.rows].reverse().map((row) => html`<tr key=${row.day}><th scope="row" class="mono">${row.day}</th>
        ${row.counts.map((count) => html`<td class="number">${count.toLocaleString()}</td>`)}</tr>`)}</tbody>
      <tfoot><tr><th scope="row">Visitor-days</th>${totals.map((total) => html`<td class="number">${total.toLocaleString()}</td>`)}</tr></tfoot>
    </table>
  </div>`;
}

export default function ExperimentPage({ params, query }) {
  const path = `/api/v1/experiments/${encodeURIComponent(params.key)}`;
  const experiment = useLoad((signal) => api(path, { signal }), [params.key]);
  const results = useLoad((signal) => api(`${path}/results`, { signal }), [params.key]);
  const range = { from: isDay(query.get("from")) ? query.get("from") : "", to: isDay(query.get("to")) ? query.get("to") : "" };
  const data = experiment.data;
  const table = useMemo(() => (data && results.data ? tabulate(results.data, data, range) : null), [data, results.data, range.from, range.to]);
  const state = data ? (data.archived ? "archived" : data.active ? "active" : "off") : null;
  return html`<div>
    <${PageHeader} title=${`Experiment: ${params.key}`} pill=${state && html`<${StatusPill} status=${state} />`} />
    <p class="meta"><a href="/experiments">Flags and experiments</a></p>
    <${LoadProblem} problem=${experiment.problem} retry=${experiment.problem && experiment.problem.status !== 404 ? experiment.reload : null} />
    ${data && html`<${Facts} facts=${[
      ["Variants", data.variants.map((v) => `${v.key} (${v.weight})`).join(", ")],
      ["Created", html`<${Time} at=${data.created_at} absolute />`], ["Changed", html`<${Time} at=${data.updated_at} />`],
    ]} />`}
    <${Panel} title="Daily unique visitors per variant">
      <${RangeBar} range=${range} />
      <${LoadProblem} problem=${results.problem} retry=${results.reload} />
      ${table && html`<${Results} table=${table} experimentKey=${params.key} />`}
    </${Panel}>
  </div>`;
}
