// A deployment's page (`/deployments/{id}`, the link deployment payloads carry): its status,
// facts (service, environment, commit, start, finish, duration, CI id), the link out to the CI
// run, and the error groups first seen since it started with events of its release.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time, duration } from "../components/time.js";
import { LinkOut, ranFor } from "./list.js";

function NewErrors({ deployment }) {
  const groups = useLoad((signal) => api("/api/v1/error-groups", { signal, query: {
    release: deployment.version, service: deployment.service, environment: deployment.environment,
    new_since: deployment.started_at, sort: "first_seen", limit: 20,
  } }), [deployment.id]);
  const items = (groups.data && groups.data.items) || [];
  return html`<${Panel} title="Errors first seen in this release">
    <${LoadProblem} problem=${groups.problem} retry=${groups.reload} />
    ${groups.data && !items.length && html`<p>No new error group since this deployment started, among events that name release ${deployment.version}.</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Errors first seen in this release</caption>
      <thead><tr><th scope="col">Error</th><th scope="col" class="number">Events</th><th scope="col">First seen</th></tr></thead>
      <tbody>${items.map((group) => html`<tr key=${group.id}>
        <td><a href=${`/errors/${encodeURIComponent(group.id)}`}>${group.title}</a></td>
        <td class="number">${group.count.toLocaleString()}</td><td><${Time} at=${group.first_seen} /></td></tr>`)}</tbody>
    </table>`}
  </${Panel}>`;
}

export default function DeploymentPage({ params }) {
  const id = params.id;
  const deployment = useLoad((signal) => api(`/api/v1/deployments/${encodeURIComponent(id)}`, { signal }), [id]);
  const data = deployment.data;
  return html`<div>
    <p class="meta"><a href="/deployments">Deployments</a></p>
    <${PageHeader} title=${data ? `Deployment: ${data.version}` : "Deployment"} pill=${data && html`<${StatusPill} status=${data.status} />`}
      actions=${data && data.url && html`<${LinkOut} href=${data.url} label="Open the CI run" />`} />
    <${LoadProblem} problem=${deployment.problem} retry=${deployment.reload} />
    ${data && html`<${Facts} facts=${[
      ["Service", html`<a href=${`/deployments?service=${encodeURIComponent(data.service)}`}>${data.service}</a>`],
      ["Environment", data.environment], ["Version", html`<span class="mono">${data.version}</span>`],
      ["Commit", data.commit ? html`<span class="mono">${data.commit}</span>` : "—"],
      ["Started", html`<${Time} at=${data.started_at} absolute />`],
      ["Finished", data.finished_at ? html`<${Time} at=${data.finished_at} absolute />` : "still running"],
      ["Duration", duration(ranFor(data.started_at, data.finished_at))],
      ["CI id", data.external_id ? html`<span class="mono">${data.external_id}</span>` : "—"],
    ]} />
    <${NewErrors} deployment=${data} />`}
  </div>`;
}
