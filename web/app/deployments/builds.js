// The builds page (`/builds`): the builds Jenkins reported through the Notification plugin,
// newest first (job, number, phase, status, duration, branch, commit, link out), paged by cursor.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Time, duration } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { LinkOut, ranFor } from "./list.js";

// Jenkins's own words for a result, coloured; a build without one is still running.
const TONE = { success: "ok", failure: "error", unstable: "warning", aborted: "muted", not_built: "muted", running: "info" };

function BuildStatus({ status }) {
  const word = status ? status.toLowerCase() : "running";
  return html`<span class=${`pill pill-${TONE[word] || "info"}`}>${word}</span>`;
}

function BuildRow({ build }) {
  return html`<tr>
    <td>${build.job}</td><td class="number">${build.number}</td>
    <td>${build.phase.toLowerCase()}</td><td><${BuildStatus} status=${build.status} /></td>
    <td><${Time} at=${build.started_at} /></td>
    <td class="number">${build.started_at ? duration(ranFor(build.started_at, build.finished_at)) : "—"}</td>
    <td class="mono">${build.branch || "—"}</td>
    <td class="mono">${build.commit ? build.commit.slice(0, 12) : "—"}</td>
    <td><${LinkOut} href=${build.url} label=${`${build.job} #${build.number} in Jenkins`} /></td>
  </tr>`;
}

export default function BuildsPage({ query }) {
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/builds", { signal, query: { cursor, limit: 50, order: "newest" } }), [cursor]);
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <p class="meta"><a href="/deployments">Deployments</a></p>
    <${PageHeader} title="Builds" />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>No builds yet. Jenkins reports them through the Notification plugin with a jenkins token: <a href="/settings/inbound-tokens">create one</a> and paste its URL into the job's Job Notifications.</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Builds, newest first</caption>
      <thead><tr><th scope="col">Job</th><th scope="col" class="number">Number</th><th scope="col">Phase</th><th scope="col">Status</th>
        <th scope="col">Started</th><th scope="col" class="number">Duration</th><th scope="col">Branch</th><th scope="col">Commit</th><th scope="col">Jenkins</th></tr></thead>
      <tbody>${items.map((build) => html`<${BuildRow} key=${build.id} build=${build} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Build pages" />`}
  </div>`;
}
