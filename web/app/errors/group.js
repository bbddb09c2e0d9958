// The error-group page (`/errors/{id}`, the link payloads carry): the title, status and the
// actions that change it (members and up), the facts, the latest event's stack as the hero,
// tags, releases, the hourly histogram with deployment markers and the group's events, paged
// through the URL.
import { useMemo, useCallback } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { canAct } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { CopyButton } from "../components/copy.js";
import { Time } from "../components/time.js";
import { TimeChart } from "../components/chart.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { useKey } from "../components/keyboard.js";
import { Stack } from "./stack.js";
import { Breadcrumbs } from "./breadcrumbs.js";
import { TagBars } from "./tags.js";

// Each action moves the group to another status; the current one is not offered.
const ACTIONS = [["resolved", "Resolve", "Resolved"], ["ignored", "Ignore", "Ignored"], ["unresolved", "Reopen", "Reopened"]];
const HOUR = 36e5;

function StatusActions({ group, reload }) {
  // `r` resolves the group on screen, as it resolves the selected row in the list.
  const resolve = useCallback(() => {
    api(`/api/v1/error-groups/${encodeURIComponent(group.id)}`, { method: "PATCH", body: { status: "resolved" } })
      .then(() => { toast(`Resolved: ${group.title}`); reload(); }, (problem) => toast(problem.detail));
  }, [group.id, group.title, reload]);
  useKey("r", resolve, canAct.value && group.status !== "resolved");
  if (!canAct.value) return null;
  return ACTIONS.filter(([status]) => status !== group.status).map(([status, verb, done]) => html`<${ActionButton}
    key=${status} kind=${status === "resolved" ? "primary" : ""} busyText=${`${verb}…`}
    action=${() => api(`/api/v1/error-groups/${encodeURIComponent(group.id)}`, { method: "PATCH", body: { status } })}
    onDone=${() => { toast(`${done}: ${group.title}`); reload(); }}>${verb}</${ActionButton}>`);
}

/** Hourly counts with the empty hours filled in, from the first hour (at least a day back) to now. */
function hourlySeries(histogram, now = Date.now()) {
  const counts = new Map(histogram.map((item) => [Date.parse(item.hour), item.count]));
  const end = Math.floor(now / HOUR) * HOUR;
  const start = Math.min(end - 23 * HOUR, ...counts.keys());
  const times = [];
  for (let at = start; at <= end; at += HOUR) times.push(at);
  return { times, counts: times.map((at) => counts.get(at) || 0) };
}

/** Deployments of the group's service (all services when it names none) since `from`, as chart markers. */
function useDeploymentMarkers(from, service) {
  const deployments = useLoad((signal) => api("/api/v1/deployments", { signal, query: { from, service, limit: 500 } }), [from, service]);
  return useMemo(() => ((deployments.data && deployments.data.items) || []).map((d) => ({
    at: Date.parse(d.started_at), label: `${d.service} ${d.version} (${d.environment})`,
  })), [deployments.data]);
}

function Histogram({ histogram, service }) {
  const series = useMemo(() => hourlySeries(histogram), [histogram]);
  const markers = useDeploymentMarkers(new Date(series.times[0]).toISOString(), service || "");
  const total = series.counts.reduce((a, b) => a + b, 0);
  const deployed = markers.length ? `; deployments: ${markers.map((marker) => marker.label).join(", ")}` : "";
  return html`<${TimeChart} times=${series.times} counts=${series.counts} markers=${markers} height=${140}
    label=${`Events per hour: ${total.toLocaleString()} since ${new Date(series.times[0]).toLocaleDateString()}${deployed}`} />`;
}

function Releases({ releases }) {
  if (!releases.length) return html`<p class="meta">No event of this group named a release.</p>`;
  return html`<table><thead><tr><th scope="col">Release</th><th scope="col" class="number">Events</th><th scope="col">Last seen</th></tr></thead>
    <tbody>${releases.map((item) => html`<tr key=${item.release}><td class="mono">${item.release}</td>
      <td class="number">${item.count.toLocaleString()}</td><td><${Time} at=${item.last_seen} /></td></tr>`)}</tbody></table>`;
}

/** A browser's name from its user agent, enough for a table cell. */
function browserOf(agent) {
  if (!agent) return "—";
  const found = [["Edg/", "Edge"], ["Firefox/", "Firefox"], ["Chrome/", "Chrome"], ["Safari/", "Safari"]].find(([mark]) => agent.includes(mark));
  return found ? found[1] : "Other";
}

function Events({ events, cursor }) {
  const items = (events.data && events.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${events.problem} retry=${events.reload} />
    ${events.data && html`<table><thead><tr><th scope="col">Time</th><th scope="col">Message</th><th scope="col">Release</th>
      <th scope="col">Environment</th><th scope="col">Browser</th><th scope="col">Session</th></tr></thead>
      <tbody>${items.map((event) => html`<tr key=${event.id}>
        <td><${Time} at=${event.timestamp} /></td><td class="event-message">${event.message}<div class="meta mono">${event.url}</div></td>
        <td class="mono">${event.release || "—"}</td><td>${event.environment || "—"}</td><td>${browserOf(event.user_agent)}</td>
        <td>${event.session_id ? html`<a href=${`/sessions/${encodeURIComponent(event.session_id)}`}>${event.session_id}</a>` : "—"}</td>
      </tr>`)}</tbody></table>
      <${CursorPaging} cursor=${cursor} nextCursor=${events.data.next_cursor} param="events" label="Event pages" />`}
  </div>`;
}

export default function ErrorGroupPage({ params, query }) {
  const id = params.id;
  const group = useLoad((signal) => api(`/api/v1/error-groups/${encodeURIComponent(id)}`, { signal }), [id]);
  const tags = useLoad((signal) => api(`/api/v1/error-groups/${encodeURIComponent(id)}/tags`, { signal }), [id]);
  const cursor = query.get("events") || "";
  const events = useLoad((signal) => api("/api/v1/errors", { signal, query: { group: id, limit: 20, cursor } }), [id, cursor]);
  const data = group.data;
  const permalink = `${window.location.origin}/errors/${encodeURIComponent(id)}`;
  const latestRelease = data && data.releases.length ? data.releases[0].release : "—";
  return html`<div class="group-page">
    <${PageHeader} title=${data ? data.title : "Error group"} pill=${data && html`<${StatusPill} status=${data.status} />`}
      actions=${html`${data && html`<${StatusActions} group=${data} reload=${group.reload} />`}<${CopyButton} text=${permalink} label="Copy link" />`} />
    <${LoadProblem} problem=${group.problem} retry=${group.reload} />
    ${data && html`<${Facts} facts=${[
      ["Events", data.count.toLocaleString()], ["Users", data.users.toLocaleString()],
      ["First seen", html`<${Time} at=${data.first_seen} />`], ["Last seen", html`<${Time} at=${data.last_seen} />`],
      ["Releases", `${data.releases.length} (latest ${latestRelease})`], ["Service", data.service || "—"],
      ["Regressions", data.regressions.toLocaleString()],
    ]} />
    <div class="group-layout">
      <div class="group-main">
        <${Panel} title="Stack trace" id="panel-stack">
          ${data.latest_event ? html`<p class="meta">Latest event, <${Time} at=${data.latest_event.timestamp} />${data.latest_event.release ? ` · release ${data.latest_event.release}` : ""}</p>
            <${Stack} event=${data.latest_event} />` : html`<p class="meta">The latest event has aged out.</p>`}
        </${Panel}>
        ${data.latest_event && data.latest_event.breadcrumbs && data.latest_event.breadcrumbs.length
          ? html`<${Panel} title="Breadcrumbs"><${Breadcrumbs} event=${data.latest_event} /></${Panel}>` : null}
        <${Panel} title="Events per hour"><${Histogram} histogram=${data.histogram} service=${data.service} /></${Panel}>
        <${Panel} title="Events"><${Events} events=${events} cursor=${cursor} /></${Panel}>
      </div>
      <div class="group-side">
        <${Panel} title="Tags"><${LoadProblem} problem=${tags.problem} retry=${tags.reload} />${tags.data && html`<${TagBars} data=${tags.data} />`}</${Panel}>
        <${Panel} title="Releases"><${Releases} releases=${data.releases} /></${Panel}>
      </div>
    </div>`}
  </div>`;
}
