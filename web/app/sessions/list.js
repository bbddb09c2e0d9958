// The Sessions page: browser sessions, latest start first, filtered by service, environment
// and time range (all in the URL), paged by cursor; each row opens the session.
import { html } from "../html.js";
import { api } from "../api.js";
import { setQuery } from "../router.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Select } from "../components/form.js";
import { Time, duration } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { RANGE_OPTIONS, rangeStart, knownRange } from "../components/range.js";
import { useServiceOptions } from "../components/services.js";


function Filters({ service, environment, range }) {
  const { services, environments } = useServiceOptions({ service, environment });
  const pick = (name) => (value) => setQuery({ [name]: value, cursor: null }, { replace: false });
  return html`<div class="filters" role="group" aria-label="Filters">
    <${Select} label="Service" value=${service} options=${services} onChange=${pick("service")} />
    <${Select} label="Environment" value=${environment} options=${environments} onChange=${pick("environment")} />
    <${Select} label="Time range" value=${range} options=${RANGE_OPTIONS} onChange=${pick("range")} />
  </div>`;
}

/** The page path of a session's URL (the origin is the same for every row). */
function pagePath(address) {
  try { const parsed = new URL(address); return parsed.pathname + parsed.search; } catch { return address; }
}

function SessionRow({ session }) {
  return html`<tr>
    <td><a class="mono" href=${`/sessions/${encodeURIComponent(session.id)}`}>${session.id}</a></td>
    <td><${Time} at=${session.started_at} /></td>
    <td class="number">${duration(session.duration_ms)}</td>
    <td class="mono url-cell">${pagePath(session.url)}</td>
    <td class="number">${session.page_views ?? "—"}</td>
    <td class="number">${session.errors ?? "—"}</td>
    <td class="mono">${session.release || "—"}</td>
    <td>${[session.service, session.environment].filter(Boolean).join(" · ") || "—"}</td>
  </tr>`;
}

export default function SessionsPage({ query }) {
  const service = query.get("service") || "";
  const environment = query.get("environment") || "";
  const range = knownRange(query.get("range") || "");
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/sessions", { signal, query: {
    service, environment, from: rangeStart(range), cursor, limit: 50,
  } }), [query.toString()]);
  const items = (list.data && list.data.items) || [];
  const filtered = !!(service || environment || range);
  return html`<div>
    <${PageHeader} title="Sessions" />
    <${Filters} service=${service} environment=${environment} range=${range} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>${filtered
      ? "No sessions match these filters."
      : "No sessions yet. The browser SDK reports each visit to /ingest/web-sessions with the same ingest key as errors."}</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Sessions</caption>
      <thead><tr><th scope="col">Session</th><th scope="col">Started</th><th scope="col" class="number">Duration</th>
        <th scope="col">Page</th><th scope="col" class="number">Page views</th><th scope="col" class="number">Errors</th>
        <th scope="col">Release</th><th scope="col">Service</th></tr></thead>
      <tbody>${items.map((session) => html`<${SessionRow} key=${session.id} session=${session} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Session pages" />`}
  </div>`;
}
