// The webhooks page (`/settings/webhooks`): every channel of the organisation (name, URL, the
// events it hears, enabled, dead letters waiting), each opening its channel page, and for
// admins the form that creates one.
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate } from "../router.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { SettingsFrame } from "../settings/frame.js";
import { toast } from "../components/toast.js";
import { ChannelForm, eventsText } from "./form.js";

function ChannelRow({ channel }) {
  return html`<tr>
    <td><a href=${`/channels/${encodeURIComponent(channel.id)}`}>${channel.name}</a></td>
    <td class="mono url-cell">${channel.url}</td>
    <td>${eventsText(channel.events)}</td>
    <td>${channel.enabled ? html`<span class="pill pill-ok">enabled</span>`
      : html`<span class="pill pill-muted">disabled</span>${channel.disabled_reason && html`<div class="meta">${channel.disabled_reason}</div>`}`}</td>
    <td class="number">${channel.dead_letters ? html`<a href="/settings/webhooks/dead-letters">${channel.dead_letters}</a>` : "0"}</td>
  </tr>`;
}

function Channels({ list }) {
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>No channel yet. ${isAdmin.value
      ? "Create one below: Lookout then POSTs alerts, incidents and deployments to its URL."
      : "An admin creates channels; alert rules then send to them."}</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Channels</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Events</th>
        <th scope="col">State</th><th scope="col" class="number">Dead letters</th></tr></thead>
      <tbody>${items.map((channel) => html`<${ChannelRow} key=${channel.id} channel=${channel} />`)}</tbody>
    </table>`}
  </div>`;
}

function CreateChannel() {
  const save = async (body) => {
    const created = await api("/api/v1/channels", { method: "POST", body });
    toast(`Channel ${created.name} created.`);
    navigate(`/channels/${encodeURIComponent(created.id)}`);
  };
  return html`<${ChannelForm} save=${save} submitText="Create channel" problemTitle="The channel was not created" />`;
}

export default function WebhooksPage() {
  const list = useLoad((signal) => api("/api/v1/channels", { signal, query: { limit: 200 } }), []);
  return html`<${SettingsFrame} current="webhooks">
    <${PageHeader} title="Webhooks" actions=${html`<a href="/settings/webhooks/dead-letters">Dead letters</a>`} />
    <p>Channels receive alerts, incidents and deployments as signed JSON POSTs. The payload, headers and how to check the signature are in docs/webhooks.md.</p>
    <${Panel} title="Channels"><${Channels} list=${list} /></${Panel}>
    ${isAdmin.value && html`<${Panel} title="Create channel"><${CreateChannel} /></${Panel}>`}
  </${SettingsFrame}>`;
}
