// A record the product links to (an alert, incident, deployment, channel or agent in a webhook
// payload), shown with its facts until its full page arrives with the operations UI.
import { html } from "../html.js";
import { api } from "../api.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem, Panel } from "../components/page.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";

const KINDS = {
  alert: { noun: "Alert", path: "/api/v1/alerts", title: (r) => r.title || r.name || r.rule_name },
  incident: { noun: "Incident", path: "/api/v1/incidents", title: (r) => r.title },
  deployment: { noun: "Deployment", path: "/api/v1/deployments", title: (r) => r.release || r.version },
  channel: { noun: "Webhook channel", path: "/api/v1/channels", title: (r) => r.name || r.url },
  agent: { noun: "Agent", path: "/api/v1/agents", title: (r) => r.name || r.hostname },
};

const isTime = (key, value) => typeof value === "string" && /_at$|^at$|_seen$|^timestamp$/.test(key) && !Number.isNaN(Date.parse(value));

function Value({ name, value }) {
  if (value === null || value === undefined || value === "") return html`<span class="meta">—</span>`;
  if (isTime(name, value)) return html`<${Time} at=${value} absolute />`;
  if (typeof value === "object") return html`<pre>${JSON.stringify(value, null, 2)}</pre>`;
  return String(value);
}

export default function RecordPage({ params, route }) {
  const kind = KINDS[route.kind];
  const record = useLoad((signal) => api(`${kind.path}/${encodeURIComponent(params.id)}`, { signal }), [params.id]);
  const data = record.data;
  const title = data ? `${kind.noun}: ${kind.title(data) || params.id}` : kind.noun;
  return html`<div>
    <${PageHeader} title=${title} pill=${data && (data.status || data.state) && html`<${StatusPill} status=${data.status || data.state} />`} />
    <${LoadProblem} problem=${record.problem} retry=${record.reload} />
    ${data && html`<${Panel} title="Details">
      <dl class="record">${Object.entries(data).map(([name, value]) => html`<dt>${name.replace(/_/g, " ")}</dt><dd><${Value} name=${name} value=${value} /></dd>`)}</dl>
    </${Panel}>`}
  </div>`;
}
