// The Agents page: every enrolled host with its status, facts and latest figures (refreshed as
// agents report), and for admins the enrolment tokens: create one (its secret shown once with
// the command to run on the host), see when each was last used, revoke one.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad, useInterval } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, ErrorSummary, ActionButton, useSubmit } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { SecretOnce, CodeBlock } from "../components/copy.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { percent, memoryPercent, diskPercent, enrolCommand } from "./figures.js";

function AgentRow({ agent }) {
  const m = agent.metrics;
  return html`<tr>
    <td><${StatusPill} status=${agent.status} /></td>
    <td><a href=${`/agents/${encodeURIComponent(agent.id)}`}>${agent.name}</a></td>
    <td class="mono">${agent.hostname}</td>
    <td>${agent.os} / ${agent.arch}</td>
    <td class="mono">${agent.version}</td>
    <td><${Time} at=${agent.last_seen} /></td>
    <td class="number">${percent(m ? m.cpu_percent : null)}</td>
    <td class="number">${percent(memoryPercent(m))}</td>
    <td class="number">${percent(diskPercent(m))}</td>
  </tr>`;
}

function EnrolHelp() {
  return html`<div class="empty guide">
    <p>No agent is enrolled yet. An agent is <code>lookout agent</code>, the same binary as this server, running on a host you want to watch:</p>
    <ol>
      <li>${isAdmin.value ? "Create an enrolment token below." : "Ask an admin of this organisation for an enrolment token."}</li>
      <li>On the host, run <code>lookout agent --server ${window.location.origin} --token TOKEN</code> (or install the lookout-agent service).</li>
      <li>The host appears here within seconds, with its CPU, memory and disk.</li>
    </ol>
  </div>`;
}

function CreateToken({ onCreated }) {
  const [name, setName] = useState("");
  const [created, setCreated] = useState(null);
  const { busy, problem, submit } = useSubmit(async () => {
    const answer = await api("/api/v1/agents/enrolment-tokens", { method: "POST", body: { name } });
    setCreated(answer);
    setName("");
    onCreated();
  });
  return html`<div>
    <${ErrorSummary} problem=${problem} />
    <form class="query-row" onSubmit=${submit}>
      <${Field} label="Token name" help="What the hosts enrolled with it are called, e.g. web servers." value=${name}
        onInput=${setName} required maxlength="100" />
      <button type="submit" class="primary" disabled=${busy}>${busy ? "Creating…" : "Create enrolment token"}</button>
    </form>
    ${created && html`<div class="notice token-created" role="status">
      <p>Enrolment token <strong>${created.name}</strong> created. Run this on each host to enrol:</p>
      <${SecretOnce} label="Enrolment token" value=${created.token} />
      <${CodeBlock} code=${enrolCommand(created.token)} label="Copy command" />
    </div>`}
  </div>`;
}

function RevokeDialog({ token, onClose, onRevoked }) {
  return html`<${Dialog} title=${`Revoke ${token.name}?`} onClose=${onClose}>
    <p>Agents connected with this token are disconnected at once and cannot connect again. Their history stays.</p>
    <div class="page-actions">
      <${ActionButton} kind="danger" busyText="Revoking…"
        action=${() => api(`/api/v1/agents/enrolment-tokens/${encodeURIComponent(token.id)}`, { method: "DELETE" })}
        onDone=${() => { toast(`Revoked: ${token.name}`); onRevoked(); }}>Revoke token</${ActionButton}>
      <button type="button" onClick=${onClose}>Cancel</button>
    </div>
  </${Dialog}>`;
}

function Tokens() {
  const tokens = useLoad((signal) => api("/api/v1/agents/enrolment-tokens", { signal, query: { limit: 100 } }), []);
  const [revoking, setRevoking] = useState(null);
  const items = (tokens.data && tokens.data.items) || [];
  return html`<${Panel} title="Enrolment tokens">
    <${CreateToken} onCreated=${tokens.reload} />
    <${LoadProblem} problem=${tokens.problem} retry=${tokens.reload} />
    ${tokens.data && !items.length && html`<p class="meta">No enrolment token yet.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Enrolment tokens</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th>
        <th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${items.map((token) => html`<tr key=${token.id}>
        <td>${token.name}</td><td><${Time} at=${token.created_at} /></td><td><${Time} at=${token.last_used_at} /></td>
        <td>${token.revoked_at ? html`revoked <${Time} at=${token.revoked_at} />` : "active"}</td>
        <td>${!token.revoked_at && html`<button type="button" class="danger" onClick=${() => setRevoking(token)}
          aria-label=${`Revoke ${token.name}`}>Revoke</button>`}</td>
      </tr>`)}</tbody>
    </table>`}
    ${revoking && html`<${RevokeDialog} token=${revoking} onClose=${() => setRevoking(null)}
      onRevoked=${() => { setRevoking(null); tokens.reload(); }} />`}
  </${Panel}>`;
}

export default function AgentsPage({ query }) {
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/agents", { signal, query: { cursor, limit: 100 } }), [cursor]);
  // Agents report every 15 seconds: the list follows them.
  useInterval(list.reload, 15000);
  const items = (list.data && list.data.items) || [];
  const online = items.filter((agent) => agent.status === "online").length;
  return html`<div>
    <${PageHeader} title="Agents" />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && !cursor && html`<${EnrolHelp} />`}
    ${items.length > 0 && html`<p class="meta">${online} of ${items.length} online.</p>
      <table>
      <caption class="visually-hidden">Agents</caption>
      <thead><tr><th scope="col">Status</th><th scope="col">Name</th><th scope="col">Hostname</th><th scope="col">OS / arch</th>
        <th scope="col">Version</th><th scope="col">Last seen</th><th scope="col" class="number">CPU</th>
        <th scope="col" class="number">Memory</th><th scope="col" class="number">Disk</th></tr></thead>
      <tbody>${items.map((agent) => html`<${AgentRow} key=${agent.id} agent=${agent} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Agent pages" />`}
    ${isAdmin.value && html`<div class="agents-tokens"><${Tokens} /></div>`}
  </div>`;
}
