// The dead-letter queue of the organisation (`/settings/webhooks/dead-letters`): every delivery
// that ran out of retries, channel by channel, with Redrive for each and Redrive all per
// channel (admins), paged through the URL (`cursor`).
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "../settings/frame.js";
import { DeliveryTable } from "./deliveries.js";

function RedriveAll({ channel, onDone }) {
  return html`<${ActionButton} busyText="Redriving…" aria-label=${`Redrive all of ${channel.name}`}
    action=${() => api(`/api/v1/channels/${encodeURIComponent(channel.id)}/deliveries/dead/retry`, { method: "POST" })}
    onDone=${(answer) => { toast(`${answer.retried} deliveries of ${channel.name} queued again.`); onDone(); }}>
    Redrive all of ${channel.name}</${ActionButton}>`;
}

export default function DeadLettersPage({ query }) {
  const cursor = query.get("cursor") || "";
  const dead = useLoad((signal) => api("/api/v1/deliveries/dead", { signal, query: { limit: 100, cursor } }), [cursor]);
  const channels = useLoad((signal) => api("/api/v1/channels", { signal, query: { limit: 200 } }), []);
  const items = (dead.data && dead.data.items) || [];
  const known = new Map(((channels.data && channels.data.items) || []).map((channel) => [channel.id, channel]));
  const channelName = (id) => (known.get(id) || { name: id }).name;
  const withDead = [...known.values()].filter((channel) => channel.dead_letters > 0);
  const reload = () => { dead.reload(); channels.reload(); };
  return html`<${SettingsFrame} current="webhooks">
    <p class="meta"><a href="/settings/webhooks">Webhooks</a></p>
    <${PageHeader} title="Dead letters" />
    <p>Deliveries that failed every retry wait here until they are redriven. A redrive sends the same body with the same delivery id, with a fresh round of retries.</p>
    <${LoadProblem} problem=${dead.problem || channels.problem} retry=${reload} />
    ${isAdmin.value && withDead.length > 0 && html`<div class="page-actions redrive-all">
      ${withDead.map((channel) => html`<${RedriveAll} key=${channel.id} channel=${channel} onDone=${reload} />`)}</div>`}
    <${Panel} title="Dead deliveries">
      ${dead.data && !items.length && html`<p>No dead letters. When a receiver stays down through every retry, its deliveries land here.</p>`}
      ${items.length > 0 && html`<${DeliveryTable} deliveries=${items} channelName=${channelName} onChange=${reload} caption="Dead letters" />`}
      ${dead.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${dead.data.next_cursor} label="Dead letter pages" />`}
    </${Panel}>
  </${SettingsFrame}>`;
}
