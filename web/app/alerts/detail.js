// One alert (`/alerts/{id}`, the link alert payloads carry): its state, facts, body, labels,
// the history of its life (pending, fired, updated, acknowledged, resolved, with when and who),
// its rule and its incident. Members acknowledge it here.
import { html } from "../html.js";
import { api } from "../api.js";
import { canAct } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { SeverityTag, acknowledge, sourceName, usePeople, whereText } from "./shared.js";

// What each step adds to its pill (who acted is added from `actor_id`).
const STEP_NOTES = {
  pending: "the condition holds; waiting for its For period", updated: "its monitor sent new details",
};

function History({ history, nameOf }) {
  if (!history.length) return html`<p class="meta">No history recorded.</p>`;
  return html`<ol class="timeline">${history.map((step, index) => html`<li key=${index}>
    <${Time} at=${step.at} absolute />
    <span><${StatusPill} status=${step.kind} /> ${[STEP_NOTES[step.kind], step.actor_id && `by ${nameOf(step.actor_id)}`].filter(Boolean).join(", ")}</span>
  </li>`)}</ol>`;
}

function Links({ alert }) {
  const links = [
    alert.rule_id && html`<li><a href=${`/alert-rules/${encodeURIComponent(alert.rule_id)}`}>The alert rule that raised it</a></li>`,
    alert.incident_id && html`<li><a href=${`/incidents/${encodeURIComponent(alert.incident_id)}`}>The incident opened with it</a></li>`,
    alert.url && html`<li><a href=${alert.url} rel="noopener noreferrer">Where its monitor shows it</a></li>`,
  ].filter(Boolean);
  if (!links.length) return html`<p class="meta">No rule, incident or monitor link.</p>`;
  return html`<ul class="plain-list">${links}</ul>`;
}

function Labels({ labels }) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return null;
  return html`<${Panel} title="Labels"><dl class="record">${entries.map(([name, value]) => html`<div key=${name}><dt class="mono">${name}</dt><dd class="mono">${value}</dd></div>`)}</dl></${Panel}>`;
}

export default function AlertPage({ params }) {
  const alert = useLoad((signal) => api(`/api/v1/alerts/${encodeURIComponent(params.id)}`, { signal }), [params.id]);
  useInterval(alert.reload, 10000);
  const nameOf = usePeople();
  const data = alert.data;
  const canAcknowledge = data && canAct.value && !data.acknowledged_at && data.state !== "resolved";
  return html`<div>
    <${PageHeader} title=${data ? `Alert: ${data.title}` : "Alert"} pill=${data && html`<${StatusPill} status=${data.state} />`}
      actions=${canAcknowledge && html`<${ActionButton} kind="primary" action=${() => acknowledge(data.id)} busyText="Acknowledging…"
        onDone=${() => { toast(`Acknowledged: ${data.title}`); alert.reload(); }}>Acknowledge</${ActionButton}>`} />
    <${LoadProblem} problem=${alert.problem} retry=${alert.reload} />
    ${data && html`<${Facts} facts=${[
      ["Severity", html`<${SeverityTag} severity=${data.severity} />`], ["Source", sourceName(data.source)],
      ["Service", whereText(data)], ["Started", html`<${Time} at=${data.fired_at} />`],
      ["Resolved", data.resolved_at ? html`<${Time} at=${data.resolved_at} />` : "not yet"],
      ["Acknowledged by", data.acknowledged_at ? html`${nameOf(data.acknowledged_by)}, <${Time} at=${data.acknowledged_at} />` : "nobody yet"],
    ]} />
    ${data.body && html`<p class="alert-body">${data.body}</p>`}
    <div class="grid-2">
      <${Panel} title="History"><${History} history=${data.history} nameOf=${nameOf} /></${Panel}>
      <${Panel} title="Related"><${Links} alert=${data} /></${Panel}>
    </div>
    <${Labels} labels=${data.labels} />`}
  </div>`;
}
