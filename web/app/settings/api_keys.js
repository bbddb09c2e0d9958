// The API keys settings page (`/settings/api-keys`, admins): the organisation's keys (name,
// prefix, role, created, last used, expiry), creating one (its secret shown once, with a curl
// command that uses it) and revoking one after a confirmation. Others are told who manages keys.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, Select, ErrorSummary, useSubmit } from "../components/form.js";
import { SecretOnce, CodeBlock } from "../components/copy.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "./frame.js";

const ROLE_NAMES = { owner: "Owner", admin: "Admin", member: "Member", viewer: "Viewer" };
const EXPIRY = [["", "Never"], ["30", "In 30 days"], ["90", "In 90 days"], ["365", "In a year"]];
const DAY_MS = 864e5;

/** A curl command that proves the key works (who it acts as). */
const curlWith = (key) => `curl -sf -H "Authorization: Bearer ${key}" ${window.location.origin}/api/v1/auth/me`;

function Created({ created, onDone }) {
  return html`<div class="notice created-key" role="status">
    <p>The key <strong>${created.name}</strong> acts as you, with your role (${ROLE_NAMES[created.role]}), until it is revoked${created.expires_at ? html` or expires <${Time} at=${created.expires_at} />` : ""}.</p>
    <${SecretOnce} label="API key" value=${created.key} />
    <p>Send it as a bearer token, for example:</p>
    <${CodeBlock} code=${curlWith(created.key)} label="Copy curl command" />
    <button type="button" onClick=${onDone}>Done</button>
  </div>`;
}

function CreateKey({ onCreated }) {
  const [name, setName] = useState("");
  const [expiry, setExpiry] = useState("");
  const [created, setCreated] = useState(null);
  const form = useSubmit(async () => {
    const expires_at = expiry ? new Date(Date.now() + Number(expiry) * DAY_MS).toISOString() : undefined;
    setCreated(await api("/api/v1/orgs/me/api-keys", { method: "POST", body: { name: name.trim(), expires_at } }));
    setName("");
    onCreated();
  });
  if (created) return html`<${Created} created=${created} onDone=${() => setCreated(null)} />`;
  return html`<div>
    <form onSubmit=${form.submit} novalidate class="filters">
      <${Field} label="Name" required maxlength="100" value=${name} onInput=${setName} placeholder="deploy script" />
      <${Select} label="Expires" value=${expiry} options=${EXPIRY} onChange=${setExpiry} />
      <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Creating…" : "Create API key"}</button>
    </form>
    <p class="meta">A key acts with your current role; it stops working if you leave the organisation.</p>
    <${ErrorSummary} problem=${form.problem} title="No key was created" />
  </div>`;
}

function Revoke({ apiKey, onClose, onRevoked }) {
  const run = useSubmit(async () => {
    await api(`/api/v1/orgs/me/api-keys/${encodeURIComponent(apiKey.id)}`, { method: "DELETE" });
    toast(`The key ${apiKey.name} was revoked.`);
    onClose();
    onRevoked();
  });
  return html`<${Dialog} title=${`Revoke ${apiKey.name}?`} onClose=${onClose}>
    <p>Programs using <code>${apiKey.prefix}…</code> are refused from their next request on. This cannot be undone.</p>
    <${ErrorSummary} problem=${run.problem} title="The key still works" />
    <div class="page-actions">
      <button type="button" onClick=${onClose}>Cancel</button>
      <button type="button" class="danger" disabled=${run.busy} onClick=${run.submit}>${run.busy ? "Revoking…" : "Revoke key"}</button>
    </div>
  <//>`;
}

function KeyRow({ apiKey, onRevoke }) {
  const revoked = !!apiKey.revoked_at;
  const expired = !revoked && apiKey.expires_at && new Date(apiKey.expires_at) <= new Date();
  return html`<tr>
    <td>${apiKey.name}</td>
    <td class="mono">${apiKey.prefix}…</td>
    <td>${apiKey.role ? ROLE_NAMES[apiKey.role] : html`<span class="meta">issuer left</span>`}</td>
    <td><${Time} at=${apiKey.created_at} /></td>
    <td><${Time} at=${apiKey.last_used_at} /></td>
    <td>${apiKey.expires_at ? html`<${Time} at=${apiKey.expires_at} />` : html`<span class="meta">never</span>`}</td>
    <td>${revoked ? html`<span class="pill pill-muted">Revoked</span>` : expired ? html`<span class="pill pill-muted">Expired</span>`
      : html`<span class="pill pill-ok">Active</span>`}</td>
    <td>${!revoked && html`<button type="button" class="danger" onClick=${() => onRevoke(apiKey)}>Revoke<span class="visually-hidden"> ${apiKey.name}</span></button>`}</td>
  </tr>`;
}

function KeyList({ cursor, reloadToken, onChanged }) {
  const list = useLoad((signal) => api("/api/v1/orgs/me/api-keys", { signal, query: { cursor, limit: 100 } }), [cursor, reloadToken]);
  const [revoking, setRevoking] = useState(null);
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<p>No API keys yet. Create one above for a script or a CI job: it is sent as
      <code>Authorization: Bearer lk_…</code> on any API request.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">API keys</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Role</th><th scope="col">Created</th>
        <th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th>
        <th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${items.map((apiKey) => html`<${KeyRow} key=${apiKey.id} apiKey=${apiKey} onRevoke=${setRevoking} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="API key pages" />`}
    ${revoking && html`<${Revoke} apiKey=${revoking} onClose=${() => setRevoking(null)} onRevoked=${onChanged} />`}
  </div>`;
}

export default function ApiKeysPage({ query }) {
  const cursor = query.get("cursor") || "";
  const [reloadToken, setReloadToken] = useState(0);
  const changed = () => setReloadToken((n) => n + 1);
  return html`<${SettingsFrame} current="api-keys">
    <${PageHeader} title="API keys" />
    ${isAdmin.value ? html`
      <${Panel} title="Create an API key"><${CreateKey} onCreated=${changed} /><//>
      <${Panel} title="Keys"><${KeyList} cursor=${cursor} reloadToken=${reloadToken} onChanged=${changed} /><//>`
    : html`<p class="empty">API keys let scripts use the API as the person who made them. Admins and owners create and revoke them;
      ask one of them for a key.</p>`}
  <//>`;
}
