// The Alert rules page (`/alert-rules`): every rule with what it measures, its current value
// (from the evaluator's last tick) against its threshold, its state and severity. Admins see
// "Create rule"; everyone opens a rule to see it in full.
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { SeverityTag, useRowKeys } from "./shared.js";
import { KIND_NAMES, formatValue, statusOf } from "./rule_kinds.js";

const rulePath = (rule) => `/alert-rules/${encodeURIComponent(rule.id)}`;

function RuleTable({ items }) {
  const { rowProps, linkRef } = useRowKeys(items, rulePath);
  return html`<table class="rules">
    <caption class="visually-hidden">Alert rules</caption>
    <thead><tr><th scope="col">Rule</th><th scope="col">Measures</th><th scope="col">State</th>
      <th scope="col" class="number">Current value</th><th scope="col" class="number">Threshold</th>
      <th scope="col">Severity</th><th scope="col">Measured</th></tr></thead>
    <tbody>${items.map((rule, index) => {
      const status = statusOf(rule);
      return html`<tr key=${rule.id} ...${rowProps(index)}>
        <td class="group-title"><a href=${rulePath(rule)} ref=${linkRef(index)}>${rule.name}</a>
          ${(rule.service || rule.environment) && html`<div class="meta">${[rule.service, rule.environment].filter(Boolean).join(" · ")}</div>`}</td>
        <td>${KIND_NAMES[rule.kind] || rule.kind}<div class="meta">over ${rule.window_seconds} s</div></td>
        <td><${StatusPill} status=${status.state} /></td>
        <td class="number">${formatValue(rule.kind, status.value)}</td>
        <td class="number">${formatValue(rule.kind, rule.threshold)}</td>
        <td><${SeverityTag} severity=${rule.severity} /></td>
        <td>${status.measured_at ? html`<${Time} at=${status.measured_at} />` : html`<span class="meta">not yet</span>`}</td>
      </tr>`;
    })}</tbody>
  </table>`;
}

export default function AlertRulesPage({ query }) {
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/alert-rules", { signal, query: { cursor, limit: 100 } }), [cursor]);
  useInterval(list.reload, 10000);
  const data = list.data;
  return html`<div>
    <${PageHeader} title="Alert rules" actions=${html`<a class="button" href="/alerts">Alerts</a>
      ${isAdmin.value && html`<a class="button primary" href="/alert-rules/new">Create rule</a>`}`} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${data && !data.items.length && html`<div class="empty">
      <p>No alert rules yet.</p>
      <p class="meta">A rule watches error events, new error groups, span latency or agents going offline, and raises an
        alert (and, if you ask, an incident) when its value reaches the threshold.</p>
      ${isAdmin.value ? html`<p><a class="button" href="/alert-rules/new">Create your first rule</a></p>` : html`<p class="meta">An admin of this organisation can create rules.</p>`}
    </div>`}
    ${data && data.items.length > 0 && html`<${RuleTable} items=${data.items} />`}
    ${data && html`<${CursorPaging} cursor=${cursor} nextCursor=${data.next_cursor} label="Alert rule pages" />`}
  </div>`;
}
