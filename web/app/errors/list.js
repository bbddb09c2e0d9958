// The Errors page: error groups found by a query and filters (all in the URL), a dense table
// with hourly sparklines, cursor paging, bulk Resolve / Ignore for members, j/k/Enter/r keys,
// and, before the first event, a guide to sending one.
import { useEffect, useRef, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate, setQuery } from "../router.js";
import { canAct } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Select, ActionButton } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Sparkline } from "../components/sparkline.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { useListKeys } from "../components/keyboard.js";
import { CursorPaging } from "../components/paging.js";
import { RANGE_OPTIONS, rangeStart, knownRange } from "../components/range.js";
import { useServiceOptions } from "../components/services.js";
import { QueryHelp, QueryHelpButton } from "./query-help.js";
import { FirstEventGuide } from "./empty.js";

const STATUS_OPTIONS = [["unresolved", "Unresolved"], ["resolved", "Resolved"], ["ignored", "Ignored"], ["all", "All statuses"]];
const SORT_OPTIONS = [["last_seen", "Last seen"], ["first_seen", "First seen"], ["count", "Most events"]];

/** The page's state, read from the URL (absent status means unresolved, absent sort last seen). */
function readFilters(query) {
  return {
    q: query.get("q") || "", status: query.get("status") || "unresolved", release: query.get("release") || "",
    environment: query.get("environment") || "", service: query.get("service") || "",
    range: knownRange(query.get("range") || ""), sort: query.get("sort") || "last_seen", cursor: query.get("cursor") || "",
  };
}

const narrowed = (f) => !!(f.q || f.release || f.environment || f.service || f.range);


async function loadGroups(filters, signal) {
  const answer = await api("/api/v1/error-groups", { signal, query: {
    status: filters.status === "all" ? null : filters.status, q: filters.q, release: filters.release,
    environment: filters.environment, service: filters.service, from: rangeStart(filters.range),
    sort: filters.sort === "last_seen" ? null : filters.sort, cursor: filters.cursor, limit: 50,
  } });
  // An empty first page without filters: has anything ever arrived? If not, teach how to send it.
  if (!answer.items.length && !narrowed(filters) && !filters.cursor) {
    const any = await api("/api/v1/error-groups", { signal, query: { limit: 1 } });
    answer.neverSent = !any.items.length;
  }
  return answer;
}

const changeStatus = (ids, status) => api("/api/v1/error-groups", { method: "PATCH", body: { ids, status } });
const groupWord = (n) => (n === 1 ? "error group" : "error groups");

function SearchBar({ filters }) {
  const [text, setText] = useState(filters.q);
  const [release, setRelease] = useState(filters.release);
  const [helpOpen, setHelpOpen] = useState(false);
  const helpButton = useRef(null);
  useEffect(() => { setText(filters.q); setRelease(filters.release); }, [filters.q, filters.release]);
  const search = (q, rel = release) => setQuery({ q, release: rel, cursor: null }, { replace: false });
  const closeHelp = () => { setHelpOpen(false); if (helpButton.current) helpButton.current.focus(); };
  const { services, environments } = useServiceOptions(filters);
  const pick = (name) => (value) => setQuery({ [name]: value, cursor: null }, { replace: false });
  return html`<form role="search" aria-label="Error groups" class="filter-bar" onSubmit=${(event) => { event.preventDefault(); search(text); }}>
    <div class="query-row">
      <div class="field query-field">
        <label for="errors-query">Query</label>
        <input id="errors-query" type="search" class="mono" value=${text} placeholder="e.g. TypeError release:1.2.0"
          aria-describedby="errors-query-help" onInput=${(event) => setText(event.currentTarget.value)} />
      </div>
      <${QueryHelpButton} open=${helpOpen} setOpen=${setHelpOpen} buttonRef=${helpButton} />
      <button type="submit" class="primary">Search</button>
      <p class="help" id="errors-query-help">Words search message, name, stack and URL; field:value narrows.</p>
    </div>
    ${helpOpen && html`<${QueryHelp} close=${closeHelp} dismiss=${() => setHelpOpen(false)} use=${(example) => { setText(example); closeHelp(); search(example); }} />`}
    <div class="filters">
      <${Select} label="Status" value=${filters.status} options=${STATUS_OPTIONS} onChange=${(v) => pick("status")(v === "unresolved" ? "" : v)} />
      <div class="field"><label for="errors-release">Release</label>
        <input id="errors-release" value=${release} size="10" onInput=${(event) => setRelease(event.currentTarget.value)}
          onChange=${(event) => search(text, event.currentTarget.value)} /></div>
      <${Select} label="Environment" value=${filters.environment} options=${environments} onChange=${pick("environment")} />
      <${Select} label="Service" value=${filters.service} options=${services} onChange=${pick("service")} />
      <${Select} label="Time range" value=${filters.range} options=${RANGE_OPTIONS} onChange=${pick("range")} />
      <${Select} label="Sort by" value=${filters.sort} options=${SORT_OPTIONS} onChange=${(v) => pick("sort")(v === "last_seen" ? "" : v)} />
    </div>
  </form>`;
}

function BulkBar({ selected, done }) {
  const ids = [...selected];
  const act = (status, verb) => html`<${ActionButton} action=${() => changeStatus(ids, status)}
    onDone=${(answer) => done(`${answer.updated} ${groupWord(answer.updated)} ${verb}`)}>${status === "resolved" ? "Resolve" : "Ignore"} selected</${ActionButton}>`;
  return html`<div class="bulk-bar" role="group" aria-label="Selected error groups">
    <span>${ids.length} selected</span>${act("resolved", "resolved")}${act("ignored", "ignored")}
  </div>`;
}

function GroupRow({ group, active, checked, onCheck, linkRef }) {
  return html`<tr class=${active ? "active" : ""} aria-selected=${active ? "true" : undefined}>
    ${canAct.value && html`<td class="select"><input type="checkbox" checked=${checked} aria-label=${`Select ${group.title}`}
      onChange=${(event) => onCheck(group.id, event.currentTarget.checked)} /></td>`}
    <td class="group-title"><a href=${`/errors/${group.id}`} ref=${linkRef}>${group.title}</a>
      ${group.culprit && html`<div class="meta mono">${group.culprit}</div>`}</td>
    <td><${StatusPill} status=${group.status} /></td>
    <td class="number">${group.count.toLocaleString()}</td>
    <td class="number">${group.users.toLocaleString()}</td>
    <td><${Time} at=${group.first_seen} /></td>
    <td><${Time} at=${group.last_seen} /></td>
    <td>${group.sparkline ? html`<${Sparkline} values=${group.sparkline} label=${`${group.sparkline.reduce((a, b) => a + b, 0)} events in the last 24 hours`} />` : "—"}</td>
  </tr>`;
}

function GroupTable({ items, reload }) {
  const [active, setActive] = useState(-1);
  const [selected, setSelected] = useState(new Set());
  const [problem, setProblem] = useState(null);
  const links = useRef([]);
  useEffect(() => { setSelected(new Set()); setActive(-1); }, [items]);
  useEffect(() => { if (active >= 0 && links.current[active]) links.current[active].focus(); }, [active]);
  const resolveRow = (index) => changeStatus([items[index].id], "resolved").then(
    () => { toast(`Resolved: ${items[index].title}`); reload(); }, setProblem);
  useListKeys(items.length, active, setActive, {
    open: (index) => navigate(`/errors/${items[index].id}`),
    extra: canAct.value ? { r: resolveRow } : {},
  });
  const check = (id, on) => { const next = new Set(selected); if (on) next.add(id); else next.delete(id); setSelected(next); };
  const all = items.length > 0 && items.every((group) => selected.has(group.id));
  const done = (message) => { toast(message); reload(); };
  return html`<div>
    ${problem && html`<p class="inline-error" role="alert">${problem.detail}</p>`}
    ${canAct.value && selected.size > 0 && html`<${BulkBar} selected=${selected} done=${done} />`}
    <table class="groups">
      <caption class="visually-hidden">Error groups</caption>
      <thead><tr>
        ${canAct.value && html`<th class="select"><input type="checkbox" aria-label="Select all on this page" checked=${all}
          onChange=${(event) => setSelected(new Set(event.currentTarget.checked ? items.map((group) => group.id) : []))} /></th>`}
        <th scope="col">Error</th><th scope="col">Status</th><th scope="col" class="number">Events</th>
        <th scope="col" class="number">Users</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Last 24 h</th>
      </tr></thead>
      <tbody>${items.map((group, index) => html`<${GroupRow} key=${group.id} group=${group} active=${index === active}
        checked=${selected.has(group.id)} onCheck=${check} linkRef=${(element) => { links.current[index] = element; }} />`)}</tbody>
    </table>
  </div>`;
}

function totalText(data) {
  if (typeof data.total !== "number") return "";
  return `${data.total_is_estimate ? "About " : ""}${data.total.toLocaleString()} ${groupWord(data.total)}`;
}

export default function ErrorsPage({ query }) {
  const filters = readFilters(query);
  const list = useLoad((signal) => loadGroups(filters, signal), [query.toString()]);
  const data = list.data;
  const clear = () => navigate("/errors");
  return html`<div>
    <${PageHeader} title="Errors">${data && !data.neverSent && html`<p class="meta total" role="status">${totalText(data)}</p>`}</${PageHeader}>
    <${SearchBar} filters=${filters} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${data && data.neverSent && html`<${FirstEventGuide} onCheck=${list.reload} />`}
    ${data && !data.neverSent && !data.items.length && html`<div class="empty">
      <p>${narrowed(filters) ? "No error groups match this query and these filters." : `No ${filters.status === "all" ? "" : `${filters.status} `}error groups.`}</p>
      ${narrowed(filters) && html`<button type="button" onClick=${clear}>Clear the query and filters</button>`}</div>`}
    ${data && data.items.length > 0 && html`<${GroupTable} items=${data.items} reload=${list.reload} />`}
    ${data && html`<${CursorPaging} cursor=${filters.cursor} nextCursor=${data.next_cursor} label="Error group pages" />`}
  </div>`;
}
