// The SCIM provisioning page (`/settings/scim`, admins, enterprise plan): the base URL an identity
// provider (Okta, Entra ID, …) is given, the organisation's SCIM tokens (name, created), making
// one (its secret shown once, with the settings to paste into the provider) and revoking one after
// a confirmation. On the free plan it says what the plan would bring and who sets it.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me, isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, Facts, LoadProblem } from "../components/page.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { SecretOnce, CopyButton } from "../components/copy.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "./frame.js";

/** The base URL identity providers call (`/scim/v2` on this server). */
export const scimBaseUrl = () => `${window.location.origin}/scim/v2`;

/** What the free plan shows instead of a settings page: the plan brings it, the operator sets it. */
export function EnterpriseOnly({ feature }) {
  return html`<p class="empty">${feature} comes with the Enterprise plan. The server's operator sets an
    organisation's plan (<code>lookout org set-plan</code>); nothing here changes until then.</p>`;
}

function Created({ created, onDone }) {
  return html`<div class="notice created-key" role="status">
    <p>The token <strong>${created.name}</strong> lets an identity provider create, change and remove this
      organisation's members until it is revoked. Give the provider these two settings:</p>
    <${Facts} facts=${[["SCIM base URL", html`<code>${scimBaseUrl()}</code>`], ["Authentication", "HTTP header, bearer token"]]} />
    <${SecretOnce} label="SCIM token" value=${created.token} />
    <button type="button" onClick=${onDone}>Done</button>
  </div>`;
}

function CreateToken({ onCreated }) {
  const [name, setName] = useState("");
  const [created, setCreated] = useState(null);
  const form = useSubmit(async () => {
    setCreated(await api("/api/v1/orgs/me/scim-tokens", { method: "POST", body: { name: name.trim() } }));
    setName("");
    onCreated();
  });
  if (created) return html`<${Created} created=${created} onDone=${() => setCreated(null)} />`;
  return html`<div>
    <form onSubmit=${form.submit} novalidate class="filters">
      <${Field} label="Token name" required maxlength="100" value=${name} onInput=${setName} placeholder="Okta" />
      <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Creating…" : "Create SCIM token"}</button>
    </form>
    <${ErrorSummary} problem=${form.problem} title="No token was created" />
  </div>`;
}

function Revoke({ token, onClose, onRevoked }) {
  const run = useSubmit(async () => {
    await api(`/api/v1/orgs/me/scim-tokens/${encodeURIComponent(token.id)}`, { method: "DELETE" });
    toast(`The SCIM token ${token.name} was revoked.`);
    onClose();
    onRevoked();
  });
  return html`<${Dialog} title=${`Revoke ${token.name}?`} onClose=${onClose}>
    <p>The identity provider using it is refused from its next request on: people it adds or removes stop
      reaching Lookout until it has a new token. This cannot be undone.</p>
    <${ErrorSummary} problem=${run.problem} title="The token still works" />
    <div class="page-actions">
      <button type="button" onClick=${onClose}>Cancel</button>
      <button type="button" class="danger" disabled=${run.busy} onClick=${run.submit}>${run.busy ? "Revoking…" : "Revoke token"}</button>
    </div>
  <//>`;
}

function TokenList({ cursor, reloadToken, onChanged }) {
  const list = useLoad((signal) => api("/api/v1/orgs/me/scim-tokens", { signal, query: { cursor, limit: 100 } }), [cursor, reloadToken]);
  const [revoking, setRevoking] = useState(null);
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<p>No SCIM tokens yet. Create one above and paste it into your identity provider's
      provisioning settings.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">SCIM tokens</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Status</th>
        <th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${items.map((token) => html`<tr key=${token.id}>
        <td>${token.name}</td>
        <td><${Time} at=${token.created_at} /></td>
        <td>${token.revoked_at ? html`<span class="pill pill-muted">Revoked</span>` : html`<span class="pill pill-ok">Active</span>`}</td>
        <td>${!token.revoked_at && html`<button type="button" class="danger" onClick=${() => setRevoking(token)}>Revoke<span class="visually-hidden"> ${token.name}</span></button>`}</td>
      </tr>`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="SCIM token pages" />`}
    ${revoking && html`<${Revoke} token=${revoking} onClose=${() => setRevoking(null)} onRevoked=${onChanged} />`}
  </div>`;
}

export default function ScimPage({ query }) {
  const cursor = query.get("cursor") || "";
  const [reloadToken, setReloadToken] = useState(0);
  const changed = () => setReloadToken((n) => n + 1);
  const enterprise = me.value.org.plan === "enterprise";
  return html`<${SettingsFrame} current="scim">
    <${PageHeader} title="SCIM provisioning" />
    ${!enterprise ? html`<${EnterpriseOnly} feature="SCIM provisioning" />`
      : !isAdmin.value ? html`<p class="empty">SCIM lets an identity provider add and remove members. Admins and owners manage its tokens.</p>`
      : html`<div class="narrow">
        <${Panel} title="Identity provider settings">
          <p>Point your identity provider's SCIM 2.0 provisioning at this URL, with a token below as a bearer token.
            Users become members (the role from their group: <code>admins</code>, <code>members</code> or <code>viewers</code>);
            deactivating one signs them out at once.</p>
          <div class="code-block"><pre><code>${scimBaseUrl()}</code></pre><${CopyButton} text=${scimBaseUrl()} label="Copy SCIM base URL" /></div>
        <//>
        <${Panel} title="Create a SCIM token"><${CreateToken} onCreated=${changed} /><//>
        <${Panel} title="Tokens"><${TokenList} cursor=${cursor} reloadToken=${reloadToken} onChanged=${changed} /><//>
      </div>`}
  <//>`;
}
