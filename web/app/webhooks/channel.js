// A channel's page (`/channels/{id}`, the link test payloads carry): its facts, the Test button
// with the receiver's answer, the form that changes it and Delete (admins), the delivery log
// paged through the URL (`log`), and its dead letters with Redrive and Redrive all.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate } from "../router.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "../settings/frame.js";
import { ChannelForm, eventsText } from "./form.js";
import { DeliveryTable, attemptText } from "./deliveries.js";

const POLL_MS = 400;
const POLL_LIMIT_MS = 30000;
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends a test event and waits until its first attempt is recorded; answers the delivery. */
async function sendTest(id) {
  const { delivery_id: deliveryId } = await api(`/api/v1/channels/${encodeURIComponent(id)}/test`, { method: "POST" });
  const until = Date.now() + POLL_LIMIT_MS;
  for (;;) {
    const delivery = await api(`/api/v1/deliveries/${encodeURIComponent(deliveryId)}`);
    if (delivery.attempts.length || Date.now() > until) return delivery;
    await pause(POLL_MS);
  }
}

function TestResult({ delivery }) {
  if (!delivery) return null;
  const attempt = delivery.attempts[0];
  if (!attempt) return html`<p role="status">The test is still waiting to be sent (delivery <span class="mono">${delivery.id}</span>).</p>`;
  const ok = attempt.status_code >= 200 && attempt.status_code < 300;
  return html`<div role="status" class=${ok ? "test-result" : "test-result test-failed"}>
    <p><strong>${ok ? "The receiver accepted the test" : "The test failed"}:</strong> ${attemptText(attempt)}.</p>
    ${attempt.response_snippet && html`<p class="meta">It answered: <span class="mono">${attempt.response_snippet}</span></p>`}
    ${!ok && delivery.next_attempt_at && html`<p class="meta">Lookout retries it <${Time} at=${delivery.next_attempt_at} />.</p>`}
  </div>`;
}

function DeleteChannel({ channel }) {
  const [open, setOpen] = useState(false);
  const remove = async () => {
    await api(`/api/v1/channels/${encodeURIComponent(channel.id)}`, { method: "DELETE" });
    toast(`Channel ${channel.name} deleted.`);
    navigate("/settings/webhooks");
  };
  return html`<button type="button" class="danger" onClick=${() => setOpen(true)}>Delete</button>
    ${open && html`<${Dialog} title=${`Delete ${channel.name}?`} onClose=${() => setOpen(false)}>
      <p>Deliveries still waiting are cancelled and alert rules stop sending here. This cannot be undone.</p>
      <div class="page-actions">
        <${ActionButton} kind="danger" action=${remove} busyText="Deleting…">Delete channel</${ActionButton}>
        <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
      </div>
    </${Dialog}>`}`;
}

/** `sent`: the last test's delivery, so the log shows it once it is recorded. */
function DeliveryLog({ id, cursor, sent }) {
  const log = useLoad((signal) => api(`/api/v1/channels/${encodeURIComponent(id)}/deliveries`, {
    signal, query: { limit: 25, cursor, order: "newest" },
  }), [id, cursor, sent]);
  const items = (log.data && log.data.items) || [];
  return html`<${Panel} title="Delivery log" actions=${html`<button type="button" class="quiet" onClick=${log.reload}>Refresh</button>`}>
    <${LoadProblem} problem=${log.problem} retry=${log.reload} />
    ${log.data && !items.length && html`<p>Nothing was sent to this channel yet. Use Test to send a test event.</p>`}
    ${items.length > 0 && html`<${DeliveryTable} deliveries=${items} onChange=${log.reload} caption="Delivery log, newest first" />`}
    ${log.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${log.data.next_cursor} param="log" label="Delivery log pages" />`}
  </${Panel}>`;
}

function DeadLetters({ channel, reloadChannel }) {
  const dead = useLoad((signal) => api("/api/v1/deliveries/dead", {
    signal, query: { channel: channel.id, limit: 100 },
  }), [channel.id, channel.dead_letters]);
  const items = (dead.data && dead.data.items) || [];
  const changed = () => { dead.reload(); reloadChannel(); };
  const all = isAdmin.value && items.length > 0 && html`<${ActionButton} busyText="Redriving…"
    action=${() => api(`/api/v1/channels/${encodeURIComponent(channel.id)}/deliveries/dead/retry`, { method: "POST" })}
    onDone=${(answer) => { toast(`${answer.retried} deliveries queued again.`); changed(); }}>Redrive all</${ActionButton}>`;
  return html`<${Panel} title="Dead letters" actions=${all}>
    <${LoadProblem} problem=${dead.problem} retry=${dead.reload} />
    ${dead.data && !items.length && html`<p>No dead letters: every delivery of this channel was sent or is still being tried.</p>`}
    ${items.length > 0 && html`<${DeliveryTable} deliveries=${items} onChange=${changed} caption="Dead letters" />`}
    ${dead.data && dead.data.next_cursor && html`<p class="meta">The oldest 100 are shown; <a href="/settings/webhooks/dead-letters">the dead-letter page</a> has them all.</p>`}
  </${Panel}>`;
}

function ChannelActions({ channel, setTest }) {
  if (!isAdmin.value) return null;
  return html`<${ActionButton} kind="primary" busyText="Testing…" action=${() => { setTest(null); return sendTest(channel.id); }}
    onDone=${setTest}>Test</${ActionButton}><${DeleteChannel} channel=${channel} />`;
}

export default function ChannelPage({ params, query }) {
  const id = params.id;
  const channel = useLoad((signal) => api(`/api/v1/channels/${encodeURIComponent(id)}`, { signal }), [id]);
  const [test, setTest] = useState(null);
  const cursor = query.get("log") || "";
  const data = channel.data;
  const save = async (body) => {
    await api(`/api/v1/channels/${encodeURIComponent(id)}`, { method: "PATCH", body });
    toast("Channel saved.");
    channel.reload();
  };
  return html`<${SettingsFrame} current="webhooks">
    <p class="meta"><a href="/settings/webhooks">Webhooks</a></p>
    <${PageHeader} title=${data ? `Channel: ${data.name}` : "Channel"}
      pill=${data && html`<span class=${`pill pill-${data.enabled ? "ok" : "muted"}`}>${data.enabled ? "enabled" : "disabled"}</span>`}
      actions=${data && html`<${ChannelActions} channel=${data} setTest=${setTest} />`} />
    <${LoadProblem} problem=${channel.problem} retry=${channel.reload} />
    ${data && html`<${Facts} facts=${[
      ["URL", html`<span class="mono">${data.url}</span>`], ["Events", eventsText(data.events)],
      ["Signing", data.has_signing_secret ? "a secret is set" : "unsigned"],
      ["Dead letters", data.dead_letters.toLocaleString()], ["Created", html`<${Time} at=${data.created_at} />`],
    ]} />
    ${data.disabled_reason && html`<p class="notice">Disabled by Lookout: ${data.disabled_reason}. Enable it again below once the receiver is back.</p>`}
    <${TestResult} delivery=${test} />
    <${DeliveryLog} id=${id} cursor=${cursor} sent=${test ? `${test.id}:${test.attempts.length}` : ""} />
    <${DeadLetters} channel=${data} reloadChannel=${channel.reload} />
    ${isAdmin.value && html`<${Panel} title="Change channel"><${ChannelForm} key=${data.updated_at} channel=${data} save=${save}
      submitText="Save changes" problemTitle="The channel was not saved" /></${Panel}>`}`}
  </${SettingsFrame}>`;
}
