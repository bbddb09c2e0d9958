// The alert-rule form: fields that fit the rule's kind, each with its label, help and error
// beside it, the channels to notify chosen from the organisation's, and a sentence saying what
// the rule will do.
import { html } from "../html.js";
import { Field, Select } from "../components/form.js";
import { KIND_HELP, KIND_OPTIONS, KIND_NAMES } from "./rule_kinds.js";
import { SEVERITIES } from "./shared.js";

const NUMBER_FIELDS = [["threshold", 0, 1e12], ["window_seconds", 1, 86400], ["for_seconds", 0, 86400], ["recovery_seconds", 0, 86400]];

/** The editable form of a rule (strings for the number fields, as typed). */
export function draftOf(rule) {
  return {
    name: rule ? rule.name : "", kind: rule ? rule.kind : "error_count", threshold: rule ? String(rule.threshold) : "",
    window_seconds: String(rule ? rule.window_seconds : 300), for_seconds: String(rule ? rule.for_seconds : 0),
    recovery_seconds: String(rule ? rule.recovery_seconds : 0), service: (rule && rule.service) || "",
    environment: (rule && rule.environment) || "", severity: rule ? rule.severity : "warning",
    channels: rule ? rule.channels : [], open_incident: rule ? rule.open_incident : false, enabled: rule ? rule.enabled : true,
  };
}

/** Field errors found before sending: {field: words}. */
export function checkDraft(draft) {
  const errors = {};
  if (!draft.name.trim()) errors.name = "Enter a name for the rule.";
  for (const [field, min, max] of NUMBER_FIELDS) {
    const text = draft[field].trim();
    if (field === "threshold" && !text && ["new_error_group", "agent_offline"].includes(draft.kind)) continue;
    const value = Number(text);
    if (!text || !Number.isFinite(value)) errors[field] = "Enter a number.";
    else if (field === "threshold" ? value <= min : value < min) errors[field] = field === "threshold" ? "Enter a number greater than 0." : `Enter ${min} or more.`;
    else if (value > max) errors[field] = `Enter at most ${max}.`;
    else if (field !== "threshold" && !Number.isInteger(value)) errors[field] = "Enter whole seconds.";
  }
  return errors;
}

/** The request body of a draft. */
export function bodyOf(draft) {
  const body = { ...draft, service: draft.service.trim() || null, environment: draft.environment.trim() || null };
  for (const [field] of NUMBER_FIELDS) body[field] = draft[field].trim() === "" ? undefined : Number(draft[field]);
  return body;
}

/** The field a server problem names ("threshold: …"), if it names one of the form's. */
export function fieldOfProblem(problem) {
  const head = ((problem && problem.detail) || "").split(":")[0].trim();
  return head in draftOf(null) ? head : "";
}

export function summaryOf(draft) {
  const where = [draft.service && `service ${draft.service}`, draft.environment && `environment ${draft.environment}`].filter(Boolean).join(", ");
  const measured = draft.kind === "agent_offline" ? `agents offline for ${draft.window_seconds || "?"} s` : `${(KIND_NAMES[draft.kind] || "").toLowerCase()} over the last ${draft.window_seconds || "?"} s`;
  const fire = Number(draft.for_seconds) > 0 ? `for ${draft.for_seconds} s` : "at the first evaluation";
  const calm = Number(draft.recovery_seconds) > 0 ? `after ${draft.recovery_seconds} s below it` : "as soon as it drops below";
  return `Raises a ${draft.severity} alert when ${measured}${where ? ` (${where})` : ""} reach ${draft.threshold || "the threshold"} ${fire}, and resolves it ${calm}.${draft.open_incident ? " Opens an incident when it fires." : ""}`;
}

function Channels({ channels, chosen, onChange, error }) {
  const toggle = (id, on) => onChange(on ? [...chosen, id] : chosen.filter((item) => item !== id));
  return html`<fieldset class=${`choices${error ? " field-invalid" : ""}`}>
    <legend>Channels</legend>
    <p class="help">None chosen: every channel whose event filter takes alert events.</p>
    ${error && html`<p class="field-error">${error}</p>`}
    ${channels === null && html`<p class="meta">Loading channels…</p>`}
    ${channels && !channels.length && html`<p class="meta">No channels yet. <a href="/settings/webhooks">Add one in Webhooks</a> to be told when the rule fires.</p>`}
    ${(channels || []).map((channel) => html`<label class="choice" key=${channel.id}>
      <input type="checkbox" checked=${chosen.includes(channel.id)} onChange=${(event) => toggle(channel.id, event.currentTarget.checked)} />
      ${channel.name}</label>`)}
  </fieldset>`;
}

export function RuleFields({ draft, set, errors, channels }) {
  const help = KIND_HELP[draft.kind] || KIND_HELP.error_count;
  const field = (name, label, text, extra = {}) => html`<${Field} label=${label} help=${text} error=${errors[name]} value=${draft[name]}
    onInput=${(value) => set({ [name]: value })} ...${extra} />`;
  const number = { type: "number", inputmode: "decimal", class: "short" };
  return html`<div class="rule-fields">
    ${field("name", "Name", "Shown as the alert's title.", { required: true, maxlength: 200 })}
    <${Select} label="Kind" value=${draft.kind} options=${KIND_OPTIONS} onChange=${(kind) => set({ kind })} />
    <div class="field-row">
      ${field("threshold", draft.kind === "span_p95_ms" ? "Threshold (ms)" : "Threshold", help.threshold, { ...number, step: "any", min: 0 })}
      ${field("window_seconds", "Window (seconds)", help.window, { ...number, min: 1 })}
    </div>
    <div class="field-row">
      ${field("for_seconds", "For (seconds)", "How long the condition must hold before the alert fires; 0 fires at once.", { ...number, min: 0 })}
      ${field("recovery_seconds", "Recovery (seconds)", "How long it must stay false before the alert resolves; 0 resolves at once.", { ...number, min: 0 })}
    </div>
    <div class="field-row">
      ${field("service", draft.kind === "agent_offline" ? "Agent" : "Service", help.service, { maxlength: 200 })}
      ${field("environment", "Environment", "Only this environment; empty for every one.", { maxlength: 100 })}
    </div>
    <${Select} label="Severity" value=${draft.severity} options=${SEVERITIES.map((name) => [name, name])} onChange=${(severity) => set({ severity })} />
    <${Channels} channels=${channels} chosen=${draft.channels} error=${errors.channels} onChange=${(chosen) => set({ channels: chosen })} />
    <label class="choice"><input type="checkbox" checked=${draft.open_incident}
      onChange=${(event) => set({ open_incident: event.currentTarget.checked })} />Open an incident when it fires</label>
    <p class="rule-summary" aria-live="polite">${summaryOf(draft)}</p>
  </div>`;
}
