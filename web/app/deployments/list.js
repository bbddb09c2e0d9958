// The deployments page (`/deployments`): every deployment CI reported, newest first (service,
// environment, version, status, start, duration, commit, link out), filtered by service and
// environment in the URL, paged by cursor; each opens its page. Builds are one link away.
import { html } from "../html.js";
import { api } from "../api.js";
import { setQuery } from "../router.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";
import { Select } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time, duration } from "../components/time.js";
import { CursorPaging } from "../components/paging.js";
import { useServiceOptions } from "../components/services.js";

/** How long a deployment ran (to now while it runs), in milliseconds. */
export function ranFor(started, finished) {
  return (finished ? Date.parse(finished) : Date.now()) - Date.parse(started);
}

/** A link out to the CI system's page, when the report gave one. */
export function LinkOut({ href, label }) {
  if (!href) return html`<span class="meta">—</span>`;
  return html`<a href=${href} rel="noopener noreferrer" target="_blank">${label}<span class="visually-hidden"> (opens in a new tab)</span></a>`;
}

function Filters({ service, environment }) {
  const { services, environments } = useServiceOptions({ service, environment });
  const pick = (name) => (value) => setQuery({ [name]: value, cursor: null }, { replace: false });
  return html`<div class="filters" role="group" aria-label="Filters">
    <${Select} label="Service" value=${service} options=${services} onChange=${pick("service")} />
    <${Select} label="Environment" value=${environment} options=${environments} onChange=${pick("environment")} />
  </div>`;
}

function DeploymentRow({ deployment }) {
  return html`<tr>
    <td>${deployment.service}</td><td>${deployment.environment}</td>
    <td><a class="mono" href=${`/deployments/${encodeURIComponent(deployment.id)}`}>${deployment.version}</a></td>
    <td><${StatusPill} status=${deployment.status} /></td>
    <td><${Time} at=${deployment.started_at} /></td>
    <td class="number">${duration(ranFor(deployment.started_at, deployment.finished_at))}</td>
    <td class="mono">${deployment.commit ? deployment.commit.slice(0, 12) : "—"}</td>
    <td><${LinkOut} href=${deployment.url} label=${`CI run of ${deployment.version}`} /></td>
  </tr>`;
}

export default function DeploymentsPage({ query }) {
  const service = query.get("service") || "";
  const environment = query.get("environment") || "";
  const cursor = query.get("cursor") || "";
  const list = useLoad((signal) => api("/api/v1/deployments", {
    signal, query: { service, environment, cursor, limit: 50, order: "newest" },
  }), [service, environment, cursor]);
  const items = (list.data && list.data.items) || [];
  return html`<div>
    <${PageHeader} title="Deployments" actions=${html`<a href="/builds">Builds</a>`} />
    <${Filters} service=${service} environment=${environment} />
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<div class="empty"><p>${service || environment
      ? "No deployments match these filters."
      : html`No deployments yet. CI reports them to /api/v1/deployments/webhook with a deployments token: <a href="/settings/inbound-tokens">create one</a> and paste its snippet into the pipeline.`}</p></div>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Deployments, newest first</caption>
      <thead><tr><th scope="col">Service</th><th scope="col">Environment</th><th scope="col">Version</th><th scope="col">Status</th>
        <th scope="col">Started</th><th scope="col" class="number">Duration</th><th scope="col">Commit</th><th scope="col">CI</th></tr></thead>
      <tbody>${items.map((deployment) => html`<${DeploymentRow} key=${deployment.id} deployment=${deployment} />`)}</tbody>
    </table>`}
    ${list.data && html`<${CursorPaging} cursor=${cursor} nextCursor=${list.data.next_cursor} label="Deployment pages" />`}
  </div>`;
}
