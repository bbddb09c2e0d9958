// The Alerts page (`/alerts`): alerts by state (`?state=`, firing unless another is chosen),
// raised by rules, browser-error spikes and external monitoring alike, in a dense table with
// where each came from, its severity, times and who acknowledged it; members acknowledge from
// the row. Cursor paging through the URL.
import { html } from "../html.js";
import { api } from "../api.js";
import { canAct, isAdmin } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { Chips, SeverityTag, acknowledge, sourceName, usePeople, useRowKeys, whereText } from "./shared.js";

const STATES = [["", "Firing"], ["pending", "Pending"], ["resolved", "Resolved"], ["all", "All"]];
const EMPTY = { "": "No alert is firing.", pending: "No alert is pending.", resolved: "No alert has resolved yet.", all: "No alert has been raised yet." };

function Acknowledged({ alert, nameOf, reload }) {
  if (alert.acknowledged_at) {
    return html`<span>${nameOf(alert.acknowledged_by)}<div class="meta"><${Time} at=${alert.acknowledged_at} /></div></span>`;
  }
  if (!canAct.value || alert.state === "resolved") return html`<span class="meta">—</span>`;
  return html`<${ActionButton} action=${() => acknowledge(alert.id)} busyText="Acknowledging…"
    aria-label=${`Acknowledge ${alert.title}`} onDone=${() => { toast(`Acknowledged: ${alert.title}`); reload(); }}>Acknowledge</${ActionButton}>`;
}

const alertPath = (alert) => `/alerts/${encodeURIComponent(alert.id)}`;

function AlertTable({ items, nameOf, reload }) {
  const { rowProps, linkRef } = useRowKeys(items, alertPath);
  return html`<table class="alerts">
    <caption class="visually-hidden">Alerts</caption>
    <thead><tr><th scope="col">Alert</th><th scope="col">State</th><th scope="col">Severity</th><th scope="col">Source</th>
      <th scope="col">Service</th><th scope="col">Started</th><th scope="col">Resolved</th><th scope="col">Acknowledged by</th></tr></thead>
    <tbody>${items.map((alert, index) => html`<tr key=${alert.id} ...${rowProps(index)}>
      <td class="group-title"><a href=${alertPath(alert)} ref=${linkRef(index)}>${alert.title}</a>
        ${alert.body && html`<div class="meta">${alert.body}</div>`}</td>
      <td><${StatusPill} status=${alert.state} /></td>
      <td><${SeverityTag} severity=${alert.severity} /></td>
      <td>${sourceName(alert.source)}</td>
      <td>${whereText(alert)}</td>
      <td><${Time} at=${alert.fired_at} /></td>
      <td>${alert.resolved_at ? html`<${Time} at=${alert.resolved_at} />` : html`<span class="meta">—</span>`}</td>
      <td><${Acknowledged} alert=${alert} nameOf=${nameOf} reload=${reload} /></td>
    </tr>`)}</tbody>
  </table>`;
}

function Empty({ state }) {
  return html`<div class="empty">
    <p>${EMPTY[state] || EMPTY.all}</p>
    <p class="meta">Alerts come from alert rules, from browser error spikes, and from external monitoring
      (Alertmanager or any tool posting to the alerts webhook with an inbound token).</p>
    ${isAdmin.value && html`<p><a class="button primary" href="/alert-rules/new">Create a rule</a></p>`}
  </div>`;
}

export default function AlertsPage({ query }) {
  const state = STATES.some(([value]) => value === (query.get("state") || "")) ? query.get("state") || "" : "";
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/alerts", { signal, query: {
    state: state === "all" ? null : state || "firing", cursor, limit: 50,
  } }), [state, cursor]);
  // Alerts change by themselves (the evaluator, monitors): the list follows.
  useInterval(list.reload, 10000);
  const nameOf = usePeople();
  const data = list.data;
  return html`<div>
    <${PageHeader} title="Alerts" actions=${html`<a class="button" href="/alert-rules">Alert rules</a>`} />
    <${Chips} label="Alert state" param="state" value=${state} options=${STATES} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${data && !data.items.length && html`<${Empty} state=${state} />`}
    ${data && data.items.length > 0 && html`<${AlertTable} items=${data.items} nameOf=${nameOf} reload=${list.reload} />`}
    ${data && html`<${CursorPaging} cursor=${cursor} nextCursor=${data.next_cursor} label="Alert pages" />`}
  </div>`;
}
