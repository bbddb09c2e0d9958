// Pieces the alerts, alert-rules and incidents pages share: who a user id is (the members
// list, read once per page), severities as words with a colour, where an alert came from,
// acknowledging, state chips kept in the URL, and j/k/Enter through a table's rows.
import { useEffect, useRef, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate, setQuery } from "../router.js";
import { me } from "../session.js";
import { useLoad } from "../components/load.js";
import { useListKeys } from "../components/keyboard.js";

export const SEVERITIES = ["critical", "high", "warning", "info"];

/** A function naming a user id: their email from the members list, "you" for the person here. */
export function usePeople() {
  const members = useLoad((signal) => api("/api/v1/orgs/me/members", { query: { limit: 500 }, signal }), []);
  const emails = new Map(((members.data && members.data.items) || []).map((member) => [member.user_id, member.email]));
  return (userId) => {
    if (!userId) return "Lookout";
    const email = emails.get(userId) || (me.value && me.value.user.id === userId ? me.value.user.email : "");
    return email || "a former member";
  };
}

/** A severity: always the word, coloured by how loud it is. */
export function SeverityTag({ severity }) {
  return html`<span class=${`severity severity-${SEVERITIES.includes(severity) ? severity : "info"}`}>${severity}</span>`;
}

const SOURCES = { rule: "Alert rule", spike: "Browser error spike", webhook: "Webhook", alertmanager: "Alertmanager" };
export const sourceName = (source) => SOURCES[source] || source;

/** Acknowledges an alert (members and up); the caller reloads with the answer. */
export const acknowledge = (id) => api(`/api/v1/alerts/${encodeURIComponent(id)}/acknowledge`, { method: "POST" });

/** Chips that pick one value of a URL parameter (`""` is the default, left out of the URL). */
export function Chips({ label, param, value, options }) {
  return html`<nav class="chips" aria-label=${label}><ul>
    ${options.map(([option, text]) => html`<li key=${option}><a href=${option ? `?${param}=${option}` : "?"}
      aria-current=${option === value ? "page" : undefined}
      onClick=${(event) => { event.preventDefault(); setQuery({ [param]: option || null, cursor: null }, { replace: false }); }}>${text}</a></li>`)}
  </ul></nav>`;
}

/** "service · environment", or a dash. */
export const whereText = (item) => [item.service, item.environment].filter(Boolean).join(" · ") || "—";

/**
 * j/k through the rows of `items`, Enter opening `pathOf(item)`. Answers `rowProps(index)`: the
 * row's class and aria-selected, and `linkRef(index)` for the row's link (focused when chosen).
 */
export function useRowKeys(items, pathOf) {
  const [active, setActive] = useState(-1);
  const links = useRef([]);
  // A refresh with the same rows keeps the selection.
  useEffect(() => setActive(-1), [items.map((item) => item.id).join(",")]);
  useEffect(() => { if (active >= 0 && links.current[active]) links.current[active].focus(); }, [active]);
  useListKeys(items.length, active, setActive, { open: (index) => navigate(pathOf(items[index])) });
  return {
    rowProps: (index) => ({ class: index === active ? "active" : "", "aria-selected": index === active ? "true" : undefined }),
    linkRef: (index) => (element) => { links.current[index] = element; },
  };
}
