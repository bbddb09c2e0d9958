// The overview: what is wrong right now. Error events per minute over the last 24 hours with
// deployment markers, the top unresolved error groups, firing alerts, open incidents and agents.
// Each panel makes one request, all in parallel, and the page refreshes itself every 30 seconds.
import { useMemo } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { TimeChart } from "../components/chart.js";
import { Sparkline } from "../components/sparkline.js";

const REFRESH_MS = 30000;
const DAY_MS = 24 * 3600 * 1000;

/** The start of the last 24 hours, to the minute (so refreshes share one URL per minute). */
function dayAgo() {
  return new Date(Math.floor((Date.now() - DAY_MS) / 60000) * 60000).toISOString();
}

function ErrorRate({ stats, deployments }) {
  const series = useMemo(() => {
    const buckets = (stats.data && stats.data.buckets) || [];
    return { times: buckets.map((b) => Date.parse(b.at)), counts: buckets.map((b) => b.count) };
  }, [stats.data]);
  const markers = useMemo(() => ((deployments.data && deployments.data.items) || []).map((d) => ({
    at: Date.parse(d.started_at), label: `${d.service} ${d.version} (${d.environment})`,
  })), [deployments.data]);
  const total = series.counts.reduce((sum, count) => sum + count, 0);
  return html`<${Panel} title="Error events per minute" actions=${html`<span class="meta">last 24 hours</span>`}>
    <${LoadProblem} problem=${stats.problem} retry=${stats.reload} />
    ${stats.data && html`<p><strong class="big-number">${total.toLocaleString()}</strong> events in the last 24 hours${
      markers.length ? `, ${markers.length} deployment${markers.length === 1 ? "" : "s"}` : ""}.</p>
      <${TimeChart} times=${series.times} counts=${series.counts} markers=${markers}
        label=${`Error events per minute over the last 24 hours: ${total} in all`} />`}
  </${Panel}>`;
}

function TopGroups({ groups }) {
  const items = (groups.data && groups.data.items) || [];
  return html`<${Panel} title="Top unresolved errors" actions=${html`<a href="/errors?status=unresolved&sort=count">All errors</a>`}>
    <${LoadProblem} problem=${groups.problem} retry=${groups.reload} />
    ${groups.data && !items.length && html`<p>No unresolved errors in the last 24 hours.</p>`}
    ${items.length > 0 && html`<table>
      <thead><tr><th scope="col">Error</th><th scope="col" class="number">Events</th><th scope="col">Last 24 h</th><th scope="col">Last seen</th></tr></thead>
      <tbody>${items.map((group) => html`<tr key=${group.id}>
        <td><a href=${`/errors/${group.id}`}>${group.title}</a><div class="meta">${group.culprit || group.service || ""}</div></td>
        <td class="number">${group.count.toLocaleString()}</td>
        <td><${Sparkline} values=${group.sparkline || []} /></td>
        <td><${Time} at=${group.last_seen} /></td>
      </tr>`)}</tbody>
    </table>`}
  </${Panel}>`;
}

function FiringAlerts({ alerts }) {
  const items = (alerts.data && alerts.data.items) || [];
  return html`<${Panel} title="Firing alerts">
    <${LoadProblem} problem=${alerts.problem} retry=${alerts.reload} />
    ${alerts.data && !items.length && html`<p>No alert is firing.</p>`}
    <ul class="plain-list">${items.map((alert) => html`<li key=${alert.id}>
      <${StatusPill} status=${alert.state} /> <a href=${`/alerts/${alert.id}`}>${alert.title}</a>
      <span class="meta"> · ${alert.severity} · since <${Time} at=${alert.fired_at} /></span></li>`)}</ul>
  </${Panel}>`;
}

function OpenIncidents({ incidents }) {
  const items = (incidents.data && incidents.data.items) || [];
  return html`<${Panel} title="Open incidents">
    <${LoadProblem} problem=${incidents.problem} retry=${incidents.reload} />
    ${incidents.data && !items.length && html`<p>No incident is open.</p>`}
    <ul class="plain-list">${items.map((incident) => html`<li key=${incident.id}>
      <${StatusPill} status=${incident.status} /> <a href=${`/incidents/${incident.id}`}>${incident.title}</a>
      <span class="meta"> · ${incident.severity} · opened <${Time} at=${incident.opened_at} /></span></li>`)}</ul>
  </${Panel}>`;
}

function Agents({ agents }) {
  const items = (agents.data && agents.data.items) || [];
  const online = items.filter((agent) => agent.status === "online").length;
  const more = agents.data && agents.data.next_cursor ? "+" : "";
  return html`<${Panel} title="Agents">
    <${LoadProblem} problem=${agents.problem} retry=${agents.reload} />
    ${agents.data && !items.length && html`<p>No agent is enrolled yet.</p>`}
    ${items.length > 0 && html`<p><strong>${online}</strong> online, <strong>${items.length - online}${more}</strong> offline.</p>
      <ul class="plain-list">${items.filter((agent) => agent.status !== "online").slice(0, 5).map((agent) => html`<li key=${agent.id}>
        <${StatusPill} status=${agent.status} /> <a href=${`/agents/${agent.id}`}>${agent.name}</a>
        <span class="meta"> · last seen <${Time} at=${agent.last_seen} /></span></li>`)}</ul>`}
  </${Panel}>`;
}

export default function OverviewPage() {
  const from = dayAgo();
  const stats = useLoad((signal) => api("/api/v1/stats/errors", { signal, query: { from } }), [from]);
  const deployments = useLoad((signal) => api("/api/v1/deployments", { signal, query: { from, limit: 100 } }), [from]);
  const groups = useLoad((signal) => api("/api/v1/error-groups", {
    signal, query: { status: "unresolved", sort: "count", from, limit: 5 },
  }), [from]);
  const alerts = useLoad((signal) => api("/api/v1/alerts", { signal, query: { state: "firing", limit: 100 } }), []);
  const incidents = useLoad((signal) => api("/api/v1/incidents", { signal, query: { status: "open", limit: 100 } }), []);
  const agents = useLoad((signal) => api("/api/v1/agents", { signal, query: { limit: 100 } }), []);
  useInterval(() => { for (const panel of [stats, deployments, groups, alerts, incidents, agents]) panel.reload(); }, REFRESH_MS);

  return html`<div class="overview">
    <${PageHeader} title="Overview" />
    <${ErrorRate} stats=${stats} deployments=${deployments} />
    <div class="grid-2">
      <${TopGroups} groups=${groups} />
      <div>
        <${FiringAlerts} alerts=${alerts} />
        <${OpenIncidents} incidents=${incidents} />
        <${Agents} agents=${agents} />
      </div>
    </div>
  </div>`;
}
