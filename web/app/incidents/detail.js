// One incident (`/incidents/{id}`, the link incident payloads carry): its facts, the timeline
// (opened, notes, changes of severity or title, linked alerts resolving, resolution, with who
// and when), its linked alerts, and for members: add a note, change the title or severity,
// resolve with an optional note, reopen.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { canAct } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { ActionButton, ErrorSummary, Field, Select, useSubmit } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { SEVERITIES, SeverityTag, usePeople, whereText } from "../alerts/shared.js";

const KIND_WORDS = { opened: "Opened", updated: "Changed", note: "Note", resolved: "Resolved", reopened: "Reopened", alert_resolved: "Alert resolved" };
const incidentPath = (id, tail = "") => `/api/v1/incidents/${encodeURIComponent(id)}${tail}`;

function Timeline({ entries, nameOf }) {
  return html`<ol class="timeline">${entries.map((entry, index) => html`<li key=${index}>
    <${Time} at=${entry.at} absolute />
    <div>
      <strong>${KIND_WORDS[entry.kind] || entry.kind}</strong> <span class="meta">by ${nameOf(entry.actor_id)}</span>
      ${entry.text && html`<p class="timeline-text">${entry.text}</p>`}
      ${entry.changes.length > 0 && html`<ul class="plain-list">${entry.changes.map((change) => html`<li key=${change.field}>
        ${change.field}: ${change.from || "(none)"} → ${change.to || "(none)"}</li>`)}</ul>`}
    </div>
  </li>`)}</ol>`;
}

/** A textarea form that posts its text and clears itself. */
function TextForm({ label, help, button, busyText, optional = false, send, idFor }) {
  const [text, setText] = useState("");
  const form = useSubmit(async () => {
    if (!optional && !text.trim()) throw { detail: `Enter the ${label.toLowerCase()}.` };
    await send(text.trim());
    setText("");
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title=${`${button} did not work`} />
    <div class="field"><label for=${idFor}>${label}</label>
      ${help && html`<p class="help" id=${`${idFor}-help`}>${help}</p>`}
      <textarea id=${idFor} rows="3" value=${text} aria-describedby=${help ? `${idFor}-help` : undefined}
        onInput=${(event) => setText(event.currentTarget.value)}></textarea></div>
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? busyText : button}</button>
  </form>`;
}

function EditForm({ incident, reload }) {
  const [title, setTitle] = useState(incident.title);
  const [severity, setSeverity] = useState(incident.severity);
  const form = useSubmit(async () => {
    await api(incidentPath(incident.id), { method: "PATCH", body: { title, severity } });
    toast("Incident changed");
    reload();
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title="The incident was not changed" />
    <${Field} label="Title" value=${title} onInput=${setTitle} maxlength="300" />
    <${Select} label="Severity" value=${severity} options=${SEVERITIES.map((name) => [name, name])} onChange=${setSeverity} />
    <button type="submit" disabled=${form.busy}>${form.busy ? "Saving…" : "Save changes"}</button>
  </form>`;
}

function LinkedAlerts({ ids }) {
  const alerts = useLoad((signal) => Promise.all(ids.slice(0, 20).map((id) => api(`/api/v1/alerts/${encodeURIComponent(id)}`, { signal })
    .catch((problem) => { if (problem.name === "AbortError") throw problem; return { id, title: id }; }))), [ids.join(",")]);
  if (!ids.length) return html`<p class="meta">No alerts are linked to this incident.</p>`;
  const items = alerts.data || ids.map((id) => ({ id, title: id }));
  return html`<ul class="plain-list">${items.map((alert) => html`<li key=${alert.id}>
    <a href=${`/alerts/${encodeURIComponent(alert.id)}`}>${alert.title}</a> ${alert.state && html`<${StatusPill} status=${alert.state} />`}</li>`)}</ul>`;
}

function Actions({ incident, reload }) {
  if (!canAct.value || incident.status !== "resolved") return null;
  return html`<${ActionButton} busyText="Reopening…" action=${() => api(incidentPath(incident.id), { method: "PATCH", body: { status: "open" } })}
    onDone=${() => { toast("Incident reopened"); reload(); }}>Reopen</${ActionButton}>`;
}

export default function IncidentPage({ params }) {
  const incident = useLoad((signal) => api(incidentPath(params.id), { signal }), [params.id]);
  useInterval(incident.reload, 15000);
  const nameOf = usePeople();
  const data = incident.data;
  const note = (text) => api(incidentPath(data.id, "/notes"), { method: "POST", body: { text } }).then(() => { toast("Note added"); incident.reload(); });
  const resolve = (text) => api(incidentPath(data.id, "/resolve"), { method: "POST", body: text ? { note: text } : {} })
    .then(() => { toast(`Resolved: ${data.title}`); incident.reload(); });
  return html`<div>
    <${PageHeader} title=${data ? `Incident: ${data.title}` : "Incident"} pill=${data && html`<${StatusPill} status=${data.status} />`}
      actions=${data && html`<${Actions} incident=${data} reload=${incident.reload} />`} />
    <${LoadProblem} problem=${incident.problem} retry=${incident.reload} />
    ${data && html`<${Facts} facts=${[
      ["Severity", html`<${SeverityTag} severity=${data.severity} />`], ["Service", whereText(data)],
      ["Opened", html`<${Time} at=${data.opened_at} />`], ["Resolved", data.resolved_at ? html`<${Time} at=${data.resolved_at} />` : "not yet"],
      ["Alerts", data.alert_ids.length],
    ]} />
    ${data.description && html`<p class="alert-body">${data.description}</p>`}
    <div class="group-layout">
      <div class="group-main">
        <${Panel} title="Timeline"><${Timeline} entries=${data.timeline} nameOf=${nameOf} /></${Panel}>
        ${canAct.value && html`<${Panel} title="Add a note"><${TextForm} label="Note" button="Add note" busyText="Adding…" idFor="incident-note" send=${note} /></${Panel}>`}
      </div>
      <div class="group-side">
        <${Panel} title="Linked alerts"><${LinkedAlerts} ids=${data.alert_ids} /></${Panel}>
        ${canAct.value && data.status === "open" && html`<${Panel} title="Resolve"><${TextForm} label="Resolution note" optional
          help="Optional: what fixed it. It goes on the timeline." button="Resolve incident" busyText="Resolving…" idFor="incident-resolution" send=${resolve} /></${Panel}>`}
        ${canAct.value && html`<${Panel} title="Change"><${EditForm} incident=${data} reload=${incident.reload}
          key=${`${data.title}\u0000${data.severity}`} /></${Panel}>`}
      </div>
    </div>`}
  </div>`;
}
