// The inbound tokens page (`/settings/inbound-tokens`, admins): the tokens build servers, CI
// systems and monitors send (kind, name, created, revoked), the form that creates one (the
// secret shown once with ready-to-paste snippets for its kind) and Revoke with a confirmation.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, Select, ErrorSummary, ActionButton, useSubmit } from "../components/form.js";
import { SecretOnce, CodeBlock } from "../components/copy.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "../settings/frame.js";
import { snippetsFor } from "./snippets.js";

const KINDS = [["jenkins", "Jenkins builds"], ["deployments", "Deployments from CI"], ["alerts", "Alerts from monitoring"]];
const KIND_TEXT = Object.fromEntries(KINDS);

function Created({ token, onDone }) {
  const snippets = snippetsFor(token.kind, window.location.origin, token.token);
  return html`<div class="created-token">
    <h3>Token ${token.name} created</h3>
    <${SecretOnce} label="Token" value=${token.token} />
    ${snippets.map((snippet) => html`<section key=${snippet.key} class="snippet" aria-label=${snippet.title}>
      <h4>${snippet.title}</h4><p>${snippet.intro}</p>
      <${CodeBlock} code=${snippet.code} label=${snippet.copy} />
    </section>`)}
    <button type="button" onClick=${onDone}>Done</button>
  </div>`;
}

function CreateToken({ onCreated }) {
  const [kind, setKind] = useState("jenkins");
  const [name, setName] = useState("");
  const [created, setCreated] = useState(null);
  const form = useSubmit(async () => {
    const answer = await api("/api/v1/orgs/me/inbound-tokens", { method: "POST", body: { kind, name: name.trim() } });
    setCreated(answer);
    setName("");
    onCreated();
  });
  if (created) return html`<${Created} token=${created} onDone=${() => setCreated(null)} />`;
  return html`<form onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title="The token was not created" />
    <${Select} label="Kind" value=${kind} options=${KINDS} onChange=${setKind} />
    <${Field} label="Name" required value=${name} onInput=${setName} help="Where it is used, such as Jenkins CI or GitHub Actions." />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Creating…" : "Create token"}</button>
  </form>`;
}

function Revoke({ token, onDone }) {
  const [open, setOpen] = useState(false);
  const revoke = () => api(`/api/v1/orgs/me/inbound-tokens/${encodeURIComponent(token.id)}`, { method: "DELETE" });
  return html`<button type="button" class="danger" onClick=${() => setOpen(true)} aria-label=${`Revoke ${token.name}`}>Revoke</button>
    ${open && html`<${Dialog} title=${`Revoke ${token.name}?`} onClose=${() => setOpen(false)}>
      <p>Requests carrying this token are refused from now on. Whatever sends it needs a new token.</p>
      <div class="page-actions">
        <${ActionButton} kind="danger" action=${revoke} busyText="Revoking…"
          onDone=${() => { setOpen(false); toast(`Token ${token.name} revoked.`); onDone(); }}>Revoke token</${ActionButton}>
        <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
      </div>
    </${Dialog}>`}`;
}

function Tokens({ list }) {
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>No inbound token yet. Create one below for Jenkins, a CI system or Alertmanager.</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Inbound tokens</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Prefix</th><th scope="col">Created</th>
        <th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${items.map((token) => html`<tr key=${token.id}>
        <td>${token.name}</td><td>${KIND_TEXT[token.kind] || token.kind}</td><td class="mono">${token.prefix}…</td>
        <td><${Time} at=${token.created_at} /></td>
        <td>${token.revoked_at ? html`<span class="pill pill-muted">revoked</span> <${Time} at=${token.revoked_at} />` : html`<span class="pill pill-ok">active</span>`}</td>
        <td>${!token.revoked_at && html`<${Revoke} token=${token} onDone=${list.reload} />`}</td>
      </tr>`)}</tbody>
    </table>`}
  </div>`;
}

export default function InboundTokensPage() {
  const allowed = isAdmin.value;
  const list = useLoad((signal) => (allowed ? api("/api/v1/orgs/me/inbound-tokens", { signal, query: { limit: 200 } }) : Promise.resolve(null)), [allowed]);
  return html`<${SettingsFrame} current="inbound-tokens">
    <${PageHeader} title="Inbound tokens" />
    <p>Jenkins, CI systems and monitoring tools send builds, deployments and alerts to Lookout with one of these tokens. A token opens only the endpoint of its kind.</p>
    ${allowed ? html`<${Panel} title="Tokens"><${Tokens} list=${list} /></${Panel}>
      <${Panel} title="Create token"><${CreateToken} onCreated=${list.reload} /></${Panel}>`
      : html`<p class="notice">Only admins manage inbound tokens.</p>`}
  </${SettingsFrame}>`;
}
