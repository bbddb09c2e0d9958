// The Members settings page (`/settings/members`): the organisation's members (e-mail, role,
// second factor) and its pending invitations. Admins invite (the link is shown once, with Copy),
// change roles with a select per row, remove and reset a member's second factor, each for the
// people their role may manage: admins manage members and viewers, owners everyone.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me, isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, Select, ErrorSummary, useSubmit } from "../components/form.js";
import { CopyButton } from "../components/copy.js";
import { Dialog } from "../components/dialog.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "./frame.js";

const ROLE_NAMES = { owner: "Owner", admin: "Admin", member: "Member", viewer: "Viewer" };
const ROLES = ["owner", "admin", "member", "viewer"];

/** Whether the signed-in person may manage someone holding `role` (the server's rule). */
function manages(role) {
  const mine = me.value.role;
  return mine === "owner" || (mine === "admin" && (role === "member" || role === "viewer"));
}

const grantable = () => ROLES.filter(manages).map((role) => [role, ROLE_NAMES[role]]);

/** A problem in words that say what to do (the server's detail, and for `last_owner` the way out). */
function explain(problem) {
  if (problem.code === "last_owner") {
    problem.detail = "This is the organisation's last owner: make another member an owner first, then change or remove this one.";
  }
  return problem;
}

function Invite({ onInvited }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("member");
  const [answer, setAnswer] = useState(null);
  const form = useSubmit(async () => {
    const added = await api("/api/v1/orgs/me/members", { method: "POST", body: { email: email.trim(), role } });
    setAnswer(added);
    setEmail("");
    onInvited();
  });
  return html`<div>
    <form onSubmit=${form.submit} novalidate class="filters">
      <${Field} label="E-mail" type="email" autocomplete="off" required value=${email} onInput=${setEmail} />
      <${Select} label="Role" value=${role} options=${grantable()} onChange=${setRole} />
      <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Inviting…" : "Invite member"}</button>
    </form>
    <${ErrorSummary} problem=${form.problem} title="Nobody was invited" />
    ${answer && (answer.invite_url
      ? html`<div class="notice invite-link" role="status">
          <p>Send this link to <strong>${answer.email}</strong>: it lets them set a password (or, with an account here
            already, sign in as themselves) and join as ${ROLE_NAMES[answer.role]}. It works once and expires${" "}<${Time} at=${answer.invite_expires_at} />.</p>
          <div class="secret-row">
            <${Field} label="Invitation link" readonly class="mono" value=${answer.invite_url}
              onFocus=${(event) => event.currentTarget.select()} />
            <${CopyButton} text=${answer.invite_url} label="Copy invitation link" />
          </div>
          <p class="warning">This link will not be shown again.</p>
        </div>`
      : html`<p class="notice" role="status">${answer.email} was added as ${ROLE_NAMES[answer.role]}.</p>`)}
  </div>`;
}

/** A confirmation dialog whose button runs `action`; its failure is shown inside it. */
function Confirm({ title, text, button, action, onClose }) {
  const run = useSubmit(async () => { await action(); onClose(); });
  return html`<${Dialog} title=${title} onClose=${onClose}>
    <p>${text}</p>
    <${ErrorSummary} problem=${run.problem} title="Nothing was changed" />
    <div class="page-actions">
      <button type="button" onClick=${onClose}>Cancel</button>
      <button type="button" class="danger" disabled=${run.busy} onClick=${run.submit}>${run.busy ? "Working…" : button}</button>
    </div>
  <//>`;
}

function RoleCell({ member, onChanged }) {
  const [problem, setProblem] = useState(null);
  const self = member.user_id === me.value.user.id;
  if (!isAdmin.value || self || !manages(member.role)) return html`${ROLE_NAMES[member.role]}`;
  const change = async (role) => {
    setProblem(null);
    try {
      await api(`/api/v1/orgs/me/members/${encodeURIComponent(member.user_id)}`, { method: "PATCH", body: { role } });
      toast(`${member.email} is now ${ROLE_NAMES[role]}; their sessions were ended.`);
      onChanged();
    } catch (error) {
      setProblem(explain(error));
    }
  };
  return html`<div class="role-cell">
    <label class="visually-hidden" for=${`role-${member.user_id}`}>Role of ${member.email}</label>
    <select id=${`role-${member.user_id}`} value=${member.role} onChange=${(event) => change(event.currentTarget.value)}>
      ${grantable().map(([role, text]) => html`<option value=${role} selected=${role === member.role}>${text}</option>`)}
    </select>
    ${problem && html`<p class="inline-error" role="alert">${problem.detail}</p>`}
  </div>`;
}

function MemberRow({ member, ask, onChanged }) {
  const self = member.user_id === me.value.user.id;
  const canManage = isAdmin.value && !self && manages(member.role);
  const path = `/api/v1/orgs/me/members/${encodeURIComponent(member.user_id)}`;
  const remove = () => ask({
    title: `Remove ${member.email}?`, button: "Remove member",
    text: `${member.email} loses access to this organisation at once: their sessions here end and the API keys they made here are revoked.`,
    action: async () => { await api(path, { method: "DELETE" }).catch((e) => { throw explain(e); }); toast(`${member.email} was removed.`); onChanged(); },
  });
  const reset = () => ask({
    title: `Reset two-factor authentication of ${member.email}?`, button: "Reset two-factor",
    text: `${member.email} signs in with the password alone and can set up a new second factor; their sessions end now.`,
    action: async () => { await api(`${path}/two-factor`, { method: "DELETE" }); toast(`The second factor of ${member.email} was reset.`); onChanged(); },
  });
  return html`<tr>
    <td>${member.email}${self && html` <span class="meta">(you)</span>`}</td>
    <td><${RoleCell} member=${member} onChanged=${onChanged} /></td>
    <td><span class=${`pill ${member.two_factor_enabled ? "pill-ok" : "pill-muted"}`}>${member.two_factor_enabled ? "2FA on" : "2FA off"}</span></td>
    <td>${member.status === "invited" ? html`<span class="pill pill-warning">Pending</span>` : "Active"}</td>
    <td><${Time} at=${member.joined_at} /></td>
    ${isAdmin.value && html`<td class="row-actions">${canManage && html`
      ${member.two_factor_enabled && html`<button type="button" class="quiet" onClick=${reset}>Reset 2FA<span class="visually-hidden"> of ${member.email}</span></button>`}
      <button type="button" class="danger" onClick=${remove}>Remove<span class="visually-hidden"> ${member.email}</span></button>`}</td>`}
  </tr>`;
}

function MemberTable({ members, caption, ask, onChanged }) {
  return html`<table>
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Two-factor</th>
      <th scope="col">Status</th><th scope="col">Added</th>${isAdmin.value && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
    <tbody>${members.map((member) => html`<${MemberRow} key=${member.user_id} member=${member} ask=${ask} onChanged=${onChanged} />`)}</tbody>
  </table>`;
}

export default function MembersPage({ query }) {
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/orgs/me/members", { signal, query: { cursor, limit: 200 } }), [cursor]);
  const [confirming, setConfirming] = useState(null);
  const items = (list.data && list.data.items) || [];
  const active = items.filter((member) => member.status !== "invited");
  const pending = items.filter((member) => member.status === "invited");
  return html`<${SettingsFrame} current="members">
    <${PageHeader} title="Members" />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${isAdmin.value && html`<${Panel} title="Invite someone"><${Invite} onInvited=${list.reload} /><//>`}
    ${list.data && html`<${Panel} title="Members">
      <${MemberTable} members=${active} caption="Members" ask=${setConfirming} onChanged=${list.reload} />
      ${!isAdmin.value && html`<p class="meta">Admins invite, change roles and remove members.</p>`}
    <//>
    <${Panel} title="Pending invitations">
      ${pending.length
        ? html`<p class="meta">Invited people join when they open their link. Removing one here makes the link useless.</p>
          <${MemberTable} members=${pending} caption="Pending invitations" ask=${setConfirming} onChanged=${list.reload} />`
        : html`<p>No pending invitations.${isAdmin.value ? " Invite someone above: they get a link to set a password." : ""}</p>`}
    <//>
    <${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Member pages" />`}
    ${confirming && html`<${Confirm} ...${confirming} onClose=${() => setConfirming(null)} />`}
  <//>`;
}
