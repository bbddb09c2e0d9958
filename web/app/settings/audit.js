// The Audit log settings page (`/settings/audit`, admins): the organisation's security events,
// newest first, filtered by actor, action and time range (`actor`, `action`, `range` as a preset
// or `custom` with `from`/`to` in the URL), paged by cursor.
import { useEffect, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { setQuery } from "../router.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Field, Select } from "../components/form.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { RANGE_OPTIONS, rangeStart, knownRange } from "../components/range.js";
import { SettingsFrame } from "./frame.js";

// Families first (the server takes `family.*`), then single actions.
const ACTIONS = [
  ["", "Any action"], ["login.*", "Sign-ins (login.*)"], ["member.*", "Members (member.*)"],
  ["api_key.*", "API keys (api_key.*)"], ["two_factor.*", "Two-factor (two_factor.*)"],
  ["channel.*", "Channels (channel.*)"], ["agent.*", "Agents (agent.*)"],
  ...["login.succeeded", "login.failed", "login.locked", "logout", "logout.everywhere", "password.changed",
    "two_factor.enabled", "two_factor.disabled", "two_factor.reset", "api_key.created", "api_key.revoked",
    "member.added", "member.role_changed", "member.removed", "invitation.accepted", "org.settings_changed",
    "ip_allowlist.changed"].map((action) => [action, action]),
];

const RANGES = [...RANGE_OPTIONS, ["custom", "Custom range"]];

/** An RFC 3339 instant as the value of a `datetime-local` field (the browser's zone). */
function localInput(iso) {
  const at = new Date(iso);
  if (!iso || Number.isNaN(at.getTime())) return "";
  return new Date(at.getTime() - at.getTimezoneOffset() * 6e4).toISOString().slice(0, 16);
}

function Filters({ actor, action, range, from, to }) {
  const [text, setText] = useState(actor);
  useEffect(() => setText(actor), [actor]);
  const pick = (name) => (value) => setQuery({ [name]: value, cursor: null }, { replace: false });
  // A preset replaces explicit instants; "Custom range" starts from them.
  const pickRange = (value) => setQuery(value === "custom" ? { range: value, cursor: null }
    : { range: value, from: null, to: null, cursor: null }, { replace: false });
  const instant = (name) => (value) => {
    const at = new Date(value);
    setQuery({ [name]: value && !Number.isNaN(at.getTime()) ? at.toISOString() : null, cursor: null }, { replace: false });
  };
  const options = ACTIONS.some(([value]) => value === action) ? ACTIONS : [...ACTIONS, [action, action]];
  return html`<div class="filters" role="group" aria-label="Filters">
    <form class="filters" onSubmit=${(event) => { event.preventDefault(); setQuery({ actor: text.trim(), cursor: null }, { replace: false }); }}>
      <${Field} label="Actor" type="search" value=${text} onInput=${setText} placeholder="e-mail or user id" />
      <button type="submit">Filter</button>
    </form>
    <${Select} label="Action" value=${action} options=${options} onChange=${pick("action")} />
    <${Select} label="Time range" value=${range} options=${RANGES} onChange=${pickRange} />
    ${range === "custom" && html`
      <${Field} label="From" type="datetime-local" value=${localInput(from)} onChange=${(event) => instant("from")(event.currentTarget.value)} />
      <${Field} label="To" type="datetime-local" value=${localInput(to)} onChange=${(event) => instant("to")(event.currentTarget.value)} />`}
  </div>`;
}

/** `{"from":"member","to":"viewer"}` as `from: member, to: viewer`. */
function detailText(detail) {
  if (!detail || typeof detail !== "object" || !Object.keys(detail).length) return "";
  return Object.entries(detail)
    .map(([key, value]) => `${key}: ${typeof value === "object" && value !== null ? JSON.stringify(value) : value}`)
    .join(", ");
}

function EntryRow({ entry }) {
  return html`<tr>
    <td><${Time} at=${entry.at} /></td>
    <td>${entry.actor_email || (entry.actor_user_id ? html`<span class="mono">${entry.actor_user_id}</span>` : html`<span class="meta">—</span>`)}</td>
    <td class="mono">${entry.action}</td>
    <td class="mono audit-target">${entry.target || ""}</td>
    <td class="audit-detail">${detailText(entry.detail)}</td>
    <td class="mono">${entry.ip || ""}</td>
  </tr>`;
}

export default function AuditPage({ query }) {
  const actor = query.get("actor") || "";
  const action = query.get("action") || "";
  const range = query.get("range") === "custom" ? "custom" : knownRange(query.get("range") || "");
  const cursor = query.get("cursor") || "";
  // Explicit instants (a custom range, a pasted link) win over a preset.
  const from = query.get("from") || rangeStart(range) || "";
  const to = query.get("to") || "";
  const admin = isAdmin.value;
  const list = useLoad((signal) => (admin
    ? api("/api/v1/audit", { signal, query: { actor, action, from, to, cursor, limit: 50 } })
    : Promise.resolve(null)), [query.toString(), admin]);
  const items = (list.data && list.data.items) || [];
  const filtered = !!(actor || action || range || from || to);
  return html`<${SettingsFrame} current="audit">
    <${PageHeader} title="Audit log" />
    ${!admin && html`<p class="empty">The audit log records sign-ins, member and key changes and setting changes. Admins and owners read it.</p>`}
    ${admin && html`<${Filters} actor=${actor} action=${action} range=${range} from=${query.get("from") || ""} to=${to} />`}
    ${range !== "custom" && (query.get("from") || to) && html`<p class="meta">Between ${query.get("from") ? html`<${Time} at=${query.get("from")} absolute />` : "the start"}
      and ${to ? html`<${Time} at=${to} absolute />` : "now"}.</p>`}
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<p class="empty">${filtered
      ? (list.data.next_cursor ? "No matching entries on this page: go on to the next page to search older entries." : "No entries match these filters.")
      : "No entries yet. Sign-ins, member and key changes and setting changes appear here."}</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Audit log</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th>
        <th scope="col">Detail</th><th scope="col">Address</th></tr></thead>
      <tbody>${items.map((entry) => html`<${EntryRow} key=${entry.id} entry=${entry} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Audit log pages" />`}
  <//>`;
}
