// One alert rule (`/alert-rules/{id}`) or a new one (`/alert-rules/new`). Admins edit it (the
// form in rule_form.js), save it, switch it off and on, and delete it after a confirmation;
// everyone sees its current value and state, measured at the evaluator's last tick.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate } from "../router.js";
import { isAdmin } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { ActionButton, ErrorSummary, useSubmit } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { KIND_NAMES, formatValue, statusOf } from "./rule_kinds.js";
import { RuleFields, bodyOf, checkDraft, draftOf, fieldOfProblem, summaryOf } from "./rule_form.js";
import { SeverityTag } from "./shared.js";

const rulePath = (id) => `/api/v1/alert-rules/${encodeURIComponent(id)}`;

function CurrentStatus({ rule }) {
  const status = statusOf(rule);
  return html`<${Panel} title="Current value">
    <${Facts} facts=${[
      ["State", html`<${StatusPill} status=${status.state} />`],
      ["Value", formatValue(rule.kind, status.value)], ["Threshold", formatValue(rule.kind, rule.threshold)],
      ["Measured", status.measured_at ? html`<${Time} at=${status.measured_at} />` : "not yet"],
    ]} />
    ${status.alert_id && html`<p><a href=${`/alerts/${encodeURIComponent(status.alert_id)}`}>Open its ${status.state} alert</a></p>`}
  </${Panel}>`;
}

function DeleteRule({ rule }) {
  const [open, setOpen] = useState(false);
  return html`<span>
    <button type="button" class="danger" onClick=${() => setOpen(true)}>Delete rule</button>
    ${open && html`<${Dialog} title=${`Delete ${rule.name}?`} onClose=${() => setOpen(false)}>
      <p>The rule stops being evaluated. Its firing alert resolves (and says so to its channels); a pending one goes.</p>
      <div class="page-actions">
        <${ActionButton} kind="danger" busyText="Deleting…" action=${() => api(rulePath(rule.id), { method: "DELETE" })}
          onDone=${() => { toast(`Deleted: ${rule.name}`); navigate("/alert-rules"); }}>Delete the rule</${ActionButton}>
        <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
      </div>
    </${Dialog}>`}
  </span>`;
}

function Actions({ rule, reload }) {
  if (!isAdmin.value || !rule) return null;
  const verb = rule.enabled ? "Disable" : "Enable";
  return html`<${ActionButton} busyText=${`${verb.slice(0, -1)}ing…`}
    action=${() => api(rulePath(rule.id), { method: "PATCH", body: { enabled: !rule.enabled } })}
    onDone=${() => { toast(`${verb}d: ${rule.name}`); reload(); }}>${verb} rule</${ActionButton}>
    <${DeleteRule} rule=${rule} />`;
}

/** The form; it starts from `rule` (null for a new one) and is remade when the rule changes. */
function Editor({ rule, reload }) {
  const [draft, setDraft] = useState(() => draftOf(rule));
  const [errors, setErrors] = useState({});
  const channels = useLoad((signal) => api("/api/v1/channels", { signal, query: { limit: 100 } }), []);
  const set = (changes) => setDraft((old) => ({ ...old, ...changes }));
  const form = useSubmit(async () => {
    const found = checkDraft(draft);
    setErrors(found);
    if (Object.keys(found).length) throw { detail: Object.values(found)[0] };
    try {
      const saved = await api(rule ? rulePath(rule.id) : "/api/v1/alert-rules", { method: rule ? "PUT" : "POST", body: bodyOf(draft) });
      toast(rule ? `Saved: ${saved.name}` : `Created: ${saved.name}`);
      if (rule) reload(); else navigate(`/alert-rules/${encodeURIComponent(saved.id)}`);
    } catch (problem) {
      const field = fieldOfProblem(problem);
      if (field) setErrors({ [field]: problem.detail });
      throw problem;
    }
  });
  const channelItems = channels.data ? channels.data.items : channels.problem ? [] : null;
  return html`<form class="rule-form" onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title=${rule ? "The rule was not saved" : "The rule was not created"} />
    <${LoadProblem} problem=${channels.problem} retry=${channels.reload} />
    <${RuleFields} draft=${draft} set=${set} errors=${errors} channels=${channelItems} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Saving…" : rule ? "Save rule" : "Create rule"}</button>
  </form>`;
}

function ReadOnly({ rule }) {
  const draft = draftOf(rule);
  return html`<${Panel} title="Settings">
    <p>${summaryOf(draft)}</p>
    <${Facts} facts=${[
      ["Kind", KIND_NAMES[rule.kind] || rule.kind], ["Window", `${rule.window_seconds} s`], ["For", `${rule.for_seconds} s`],
      ["Recovery", `${rule.recovery_seconds} s`], ["Severity", html`<${SeverityTag} severity=${rule.severity} />`],
      ["Channels", rule.channels.length ? rule.channels.length : "all that match"], ["Enabled", rule.enabled ? "yes" : "no"],
    ]} />
    <p class="meta">Only admins change alert rules.</p>
  </${Panel}>`;
}

export default function AlertRulePage({ params }) {
  const id = params.id;
  if (!id) {
    return html`<div>
      <${PageHeader} title="New alert rule" />
      ${isAdmin.value ? html`<${Editor} rule=${null} />` : html`<p>Only admins of this organisation create alert rules. <a href="/alert-rules">Back to the rules</a>.</p>`}
    </div>`;
  }
  return html`<${ExistingRule} id=${id} />`;
}

function ExistingRule({ id }) {
  const rule = useLoad((signal) => api(rulePath(id), { signal }), [id]);
  const data = rule.data;
  // The current value moves every tick; the form keeps what is being typed.
  const [live, setLive] = useState(null);
  useInterval(() => api(rulePath(id)).then(setLive, () => {}), 5000);
  const shown = live && data && live.id === data.id ? live : data;
  return html`<div>
    <${PageHeader} title=${data ? `Alert rule: ${data.name}` : "Alert rule"} pill=${data && !data.enabled && html`<${StatusPill} status="disabled" />`}
      actions=${html`<${Actions} rule=${data} reload=${rule.reload} />`} />
    <${LoadProblem} problem=${rule.problem} retry=${rule.reload} />
    ${data && html`<${CurrentStatus} rule=${shown} />
      ${isAdmin.value ? html`<${Panel} title="Settings"><${Editor} rule=${data} reload=${rule.reload} key=${data.updated_at} /></${Panel}>` : html`<${ReadOnly} rule=${data} />`}`}
  </div>`;
}
