// The agent page (`/agents/{id}`, heading `Agent: <name>`): its status and facts, host metric
// charts over the last 24 hours (one point a minute), and for admins its terminal sessions and
// the way into a terminal.
import { useMemo } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time, duration } from "../components/time.js";
import { TimeChart } from "../components/chart.js";
import { CursorPaging } from "../components/paging.js";
import { percent, memoryPercent, diskPercent, bytes, load, uptime } from "./figures.js";

const NO_MARKERS = [];
const CHARTS = [
  ["CPU busy (%)", "CPU", (p) => p.cpu_percent],
  ["Memory in use (%)", "memory", memoryPercent],
  ["Disk in use (%), file system of /", "disk", diskPercent],
  ["Load average (1 minute)", "load", (p) => p.load1],
];

/**
 * The points that have this figure, with empty ends at the window's edges, so the time axis
 * always spans the window (a single point would otherwise stretch it over years).
 */
function seriesOf(points, pick, span) {
  const known = points.filter((point) => pick(point) !== null && pick(point) !== undefined);
  if (!known.length) return { times: [], values: [] };
  const times = known.map((point) => Date.parse(point.at));
  const values = known.map(pick);
  return { times: [span.from, ...times, span.to], values: [null, ...values, null], latest: values[values.length - 1] };
}

function MetricChart({ points, span, title, series, pick }) {
  const data = useMemo(() => seriesOf(points, pick, span), [points]);
  if (!data.times.length) return html`<p class="meta">${title}: no figures yet (the host has not reported this one).</p>`;
  return html`<div><h3>${title}</h3><${TimeChart} times=${data.times} counts=${data.values} markers=${NO_MARKERS}
    height=${140} seriesLabel=${series} label=${`${title} over the last 24 hours, latest ${data.latest.toFixed(1)}`} /></div>`;
}

function Metrics({ history }) {
  const points = (history.data && history.data.points) || [];
  const span = history.data && { from: Date.parse(history.data.from), to: Math.min(Date.parse(history.data.to), Date.now()) };
  return html`<div>
    <${LoadProblem} problem=${history.problem} retry=${history.reload} />
    ${history.data && !points.length && html`<p class="meta">No figures yet: a connected agent reports every 15 seconds, and a point is kept for each minute.</p>`}
    ${points.length > 0 && html`<div class="grid-2">${CHARTS.map(([title, series, pick]) =>
      html`<${MetricChart} key=${series} points=${points} span=${span} title=${title} series=${series} pick=${pick} />`)}</div>`}
  </div>`;
}

function ended(session) {
  if (!session.ended_at) return html`<${StatusPill} status="running" />`;
  return session.reason || "—";
}

function Sessions({ id, cursor }) {
  const sessions = useLoad((signal) => api(`/api/v1/agents/${encodeURIComponent(id)}/sessions`,
    { signal, query: { cursor, limit: 20 } }), [id, cursor]);
  const items = (sessions.data && sessions.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${sessions.problem} retry=${sessions.reload} />
    ${sessions.data && !items.length && html`<p class="meta">No terminal was opened on this agent yet.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Terminal sessions</caption>
      <thead><tr><th scope="col">Who</th><th scope="col">Started</th><th scope="col">Ended</th>
        <th scope="col" class="number">Duration</th><th scope="col">How it ended</th><th scope="col">From</th></tr></thead>
      <tbody>${items.map((session) => html`<tr key=${session.id}>
        <td>${session.user_email || html`<span class="mono">${session.user_id}</span>`}</td>
        <td><${Time} at=${session.started_at} /></td><td>${session.ended_at ? html`<${Time} at=${session.ended_at} />` : "—"}</td>
        <td class="number">${session.ended_at ? duration(Date.parse(session.ended_at) - Date.parse(session.started_at)) : "—"}</td>
        <td>${ended(session)}</td><td class="mono">${session.ip || "—"}</td>
      </tr>`)}</tbody>
    </table>
    <${CursorPaging} cursor=${cursor} nextCursor=${sessions.data.next_cursor} param="sessions" label="Session pages" />`}
  </div>`;
}

/** The way into a terminal: admins only, and only where the agent takes shells. */
function TerminalAction({ agent }) {
  if (!isAdmin.value) return null;
  if (!agent.shell_enabled) return html`<span class="meta">Terminal disabled on this host (--no-shell)</span>`;
  // A full page load: the terminal page's document has its own style policy (docs/ui.md).
  return html`<a class="button primary" href=${`/agents/${encodeURIComponent(agent.id)}/terminal`} target="_self">Open terminal</a>`;
}

export default function AgentPage({ params, query }) {
  const id = params.id;
  const agent = useLoad((signal) => api(`/api/v1/agents/${encodeURIComponent(id)}`, { signal }), [id]);
  const history = useLoad((signal) => api(`/api/v1/agents/${encodeURIComponent(id)}/metrics`, { signal }), [id]);
  useInterval(agent.reload, 15000);
  useInterval(history.reload, 60000);
  const data = agent.data;
  const m = (data && data.metrics) || {};
  return html`<div>
    <${PageHeader} title=${data ? `Agent: ${data.name}` : "Agent"} pill=${data && html`<${StatusPill} status=${data.status} />`}
      actions=${data && html`<${TerminalAction} agent=${data} />`} />
    <${LoadProblem} problem=${agent.problem} retry=${agent.reload} />
    ${data && html`<${Facts} facts=${[
      ["Hostname", data.hostname], ["OS / arch", `${data.os} / ${data.arch}`], ["Version", data.version],
      ["Last seen", html`<${Time} at=${data.last_seen} />`], ["Enrolled", html`<${Time} at=${data.created_at} />`],
      ["Uptime", uptime(m.uptime_seconds)], ["CPU", percent(m.cpu_percent)],
      ["Memory", `${percent(memoryPercent(m))} of ${bytes(m.memory_total_bytes)}`],
      ["Disk", `${percent(diskPercent(m))} of ${bytes(m.disk_total_bytes)}`],
      ["Load", [m.load1, m.load5, m.load15].map(load).join(" · ")],
    ]} />
    <${Panel} title="Host metrics, last 24 hours"><${Metrics} history=${history} /></${Panel}>
    ${isAdmin.value && html`<${Panel} title="Terminal sessions"><${Sessions} id=${id} cursor=${query.get("sessions") || ""} /></${Panel}>`}`}
  </div>`;
}
