// Deliveries shown the same way on the channel page and the dead-letter page: a table of
// deliveries with their attempts (time, status code, error, duration) and, for admins, the
// Redrive button of each dead one.
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { ActionButton } from "../components/form.js";
import { Time, duration } from "../components/time.js";
import { toast } from "../components/toast.js";
import { DeliveryState } from "./form.js";

/** One attempt in a line: when, the answer (status code or error) and how long it took. */
export function attemptText(attempt) {
  const answer = attempt.status_code ? `HTTP ${attempt.status_code}` : "no answer";
  return `${answer}${attempt.error ? `: ${attempt.error}` : ""} in ${duration(attempt.duration_ms)}`;
}

function AttemptLine({ attempt }) {
  const ok = attempt.status_code >= 200 && attempt.status_code < 300;
  return html`<${Time} at=${attempt.at} /> · <span class=${ok ? "" : "attempt-failed"}>${attemptText(attempt)}</span>`;
}

/** The last attempt in a line; earlier ones behind a disclosure, so rows stay one line high. */
function Attempts({ attempts }) {
  if (!attempts.length) return html`<span class="meta">not tried yet</span>`;
  const last = attempts[attempts.length - 1];
  if (attempts.length === 1) return html`<${AttemptLine} attempt=${last} />`;
  return html`<div><${AttemptLine} attempt=${last} />
    <details class="attempts"><summary>All ${attempts.length} attempts</summary>
      <ol>${attempts.map((attempt, index) => html`<li key=${index}><${AttemptLine} attempt=${attempt} /></li>`)}</ol>
    </details></div>`;
}

function Redrive({ delivery, onDone }) {
  return html`<${ActionButton} busyText="Redriving…" aria-label=${`Redrive ${delivery.id}`}
    action=${() => api(`/api/v1/deliveries/${encodeURIComponent(delivery.id)}/retry`, { method: "POST" })}
    onDone=${() => { toast(`Delivery ${delivery.id} queued again.`); onDone(); }}>Redrive</${ActionButton}>`;
}

/**
 * `deliveries`: the rows; `channelName(id)`: a channel's name for the Channel column (absent
 * on the channel page); `onChange`: reload after a redrive.
 */
export function DeliveryTable({ deliveries, channelName, onChange, caption }) {
  const redrivable = isAdmin.value && deliveries.some((delivery) => delivery.state === "dead");
  return html`<table class="deliveries">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Created</th>${channelName && html`<th scope="col">Channel</th>`}<th scope="col">Event</th>
      <th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Next retry</th>
      ${redrivable && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
    <tbody>${deliveries.map((delivery) => html`<tr key=${delivery.id}>
      <td><${Time} at=${delivery.created_at} /><div class="meta mono">${delivery.id}</div></td>
      ${channelName && html`<td><a href=${`/channels/${encodeURIComponent(delivery.channel_id)}`}>${channelName(delivery.channel_id)}</a></td>`}
      <td class="mono">${delivery.event}</td>
      <td><${DeliveryState} state=${delivery.state} /></td>
      <td><${Attempts} attempts=${delivery.attempts} /></td>
      <td>${delivery.next_attempt_at ? html`<${Time} at=${delivery.next_attempt_at} />` : "—"}</td>
      ${redrivable && html`<td>${delivery.state === "dead" && html`<${Redrive} delivery=${delivery} onDone=${onChange} />`}</td>`}
    </tr>`)}</tbody>
  </table>`;
}
