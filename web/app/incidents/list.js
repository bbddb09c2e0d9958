// The Incidents page (`/incidents`): open or resolved incidents (`?status=`, open unless
// another is chosen) with severity, service, when they opened and resolved and how many alerts
// they link; members open one with the form under "Open incident".
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate } from "../router.js";
import { canAct } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, Select, ErrorSummary, useSubmit } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { Chips, SEVERITIES, SeverityTag, useRowKeys, whereText } from "../alerts/shared.js";

const STATUSES = [["", "Open"], ["resolved", "Resolved"], ["all", "All"]];

function OpenForm({ close }) {
  const [draft, setDraft] = useState({ title: "", severity: "high", description: "", service: "", environment: "" });
  const [titleError, setTitleError] = useState("");
  const set = (name) => (value) => setDraft((old) => ({ ...old, [name]: value }));
  const form = useSubmit(async () => {
    if (!draft.title.trim()) { setTitleError("Enter a title."); throw { detail: "Enter a title." }; }
    setTitleError("");
    const opened = await api("/api/v1/incidents", { method: "POST", body: draft });
    toast(`Opened: ${opened.title}`);
    navigate(`/incidents/${encodeURIComponent(opened.id)}`);
  });
  return html`<${Panel} title="Open an incident">
    <form onSubmit=${form.submit} novalidate class="incident-form">
      <${ErrorSummary} problem=${form.problem} title="The incident was not opened" />
      <${Field} label="Title" help="What is wrong, as people will search for it." value=${draft.title} onInput=${set("title")} error=${titleError} required maxlength="300" />
      <${Select} label="Severity" value=${draft.severity} options=${SEVERITIES.map((name) => [name, name])} onChange=${set("severity")} />
      <div class="field"><label for="incident-description">Description</label>
        <textarea id="incident-description" rows="3" value=${draft.description} onInput=${(event) => set("description")(event.currentTarget.value)}></textarea></div>
      <div class="field-row">
        <${Field} label="Service" help="Optional." value=${draft.service} onInput=${set("service")} />
        <${Field} label="Environment" help="Optional." value=${draft.environment} onInput=${set("environment")} />
      </div>
      <div class="page-actions">
        <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Opening…" : "Open incident"}</button>
        <button type="button" onClick=${close}>Cancel</button>
      </div>
    </form>
  </${Panel}>`;
}

const incidentPath = (incident) => `/incidents/${encodeURIComponent(incident.id)}`;

function IncidentTable({ items }) {
  const { rowProps, linkRef } = useRowKeys(items, incidentPath);
  return html`<table class="incidents">
    <caption class="visually-hidden">Incidents</caption>
    <thead><tr><th scope="col">Incident</th><th scope="col">Status</th><th scope="col">Severity</th><th scope="col">Service</th>
      <th scope="col">Opened</th><th scope="col">Resolved</th><th scope="col" class="number">Alerts</th></tr></thead>
    <tbody>${items.map((incident, index) => html`<tr key=${incident.id} ...${rowProps(index)}>
      <td class="group-title"><a href=${incidentPath(incident)} ref=${linkRef(index)}>${incident.title}</a></td>
      <td><${StatusPill} status=${incident.status} /></td>
      <td><${SeverityTag} severity=${incident.severity} /></td>
      <td>${whereText(incident)}</td>
      <td><${Time} at=${incident.opened_at} /></td>
      <td>${incident.resolved_at ? html`<${Time} at=${incident.resolved_at} />` : html`<span class="meta">—</span>`}</td>
      <td class="number">${incident.alert_ids.length}</td>
    </tr>`)}</tbody>
  </table>`;
}

export default function IncidentsPage({ query }) {
  const status = STATUSES.some(([value]) => value === (query.get("status") || "")) ? query.get("status") || "" : "";
  const cursor = query.get("cursor") || "";
  const [opening, setOpening] = useState(false);
  const list = useLoad((signal) => api("/api/v1/incidents", { signal, query: {
    status: status === "all" ? null : status || "open", cursor, limit: 50,
  } }), [status, cursor]);
  useInterval(list.reload, 15000);
  const data = list.data;
  return html`<div>
    <${PageHeader} title="Incidents" actions=${canAct.value && !opening && html`<button type="button" class="primary" onClick=${() => setOpening(true)}>Open incident</button>`} />
    ${opening && html`<${OpenForm} close=${() => setOpening(false)} />`}
    <${Chips} label="Incident status" param="status" value=${status} options=${STATUSES} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${data && !data.items.length && html`<div class="empty">
      <p>${status === "resolved" ? "No incident has been resolved yet." : status === "all" ? "No incident has been opened yet." : "No open incidents."}</p>
      <p class="meta">Incidents gather what a team knows while something is wrong: notes, changes of severity and the alerts
        involved. Alert rules with "Open an incident" open one when they fire${canAct.value ? "; you can open one by hand with Open incident" : ""}.</p>
    </div>`}
    ${data && data.items.length > 0 && html`<${IncidentTable} items=${data.items} />`}
    ${data && html`<${CursorPaging} cursor=${cursor} nextCursor=${data.next_cursor} label="Incident pages" />`}
  </div>`;
}
