// The Services settings page (`/settings/services`): every service the server has seen in
// ingested data, with its environments, when it was last seen and its errors of the last 24
// hours, each linking to the errors list filtered by that service. Read by everyone.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Time } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { SettingsFrame } from "./frame.js";

const errorsOf = (service, range) => `/errors?${new URLSearchParams({ service, ...(range ? { range } : {}) })}`;

function ServiceRow({ service }) {
  return html`<tr>
    <td><a href=${errorsOf(service.name)}>${service.name}</a></td>
    <td>${(service.environments || []).join(", ") || html`<span class="meta">none named</span>`}</td>
    <td><${Time} at=${service.last_seen} /></td>
    <td class="number">${service.errors_24h > 0
      ? html`<a href=${errorsOf(service.name, "24h")} aria-label=${`${service.errors_24h} errors of ${service.name} in 24 hours`}>${service.errors_24h}</a>`
      : "0"}</td>
  </tr>`;
}

export default function ServicesPage({ query }) {
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/services", { signal, query: { cursor, limit: 100 } }), [cursor]);
  const items = (list.data && list.data.items) || [];
  return html`<${SettingsFrame} current="services">
    <${PageHeader} title="Services" />
    <p class="meta">A service appears when ingested errors, sessions or spans name it in their <code>service</code> field.</p>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>No services yet. Give each event a <code>service</code>
      (and an <code>environment</code>) when sending it — the SDK's <code>service</code> option does — and it is listed
      here. <a href="/settings/ingest">How to send data</a>.</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Services</caption>
      <thead><tr><th scope="col">Service</th><th scope="col">Environments</th><th scope="col">Last seen</th>
        <th scope="col" class="number">Errors, 24 h</th></tr></thead>
      <tbody>${items.map((service) => html`<${ServiceRow} key=${service.name} service=${service} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Service pages" />`}
  <//>`;
}
