// The trail a browser left before an error (clicks, navigations, failed requests), newest
// first, each with how long before the error it happened; shown under the stack of the error
// group's latest event.
import { html } from "../html.js";

const LABELS = { click: "Click", navigation: "Navigation", request: "Request" };

/** How long before `error` (RFC 3339) the breadcrumb at `at` (RFC 3339 or epoch ms) happened. */
export function before(at, error) {
  const crumb = typeof at === "number" ? at : Date.parse(at);
  const ms = Date.parse(error) - crumb;
  if (!Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms before`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s before`;
  return `${Math.round(ms / 60000)} min before`;
}

const text = (value) => (typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value));

export function Breadcrumbs({ event }) {
  const crumbs = (event.breadcrumbs || []).slice().reverse();
  if (!crumbs.length) return null;
  return html`<table class="breadcrumbs">
    <caption class="meta">The latest event's last ${crumbs.length === 1 ? "step" : `${crumbs.length} steps`}, newest first</caption>
    <thead><tr><th scope="col">When</th><th scope="col">Type</th><th scope="col">What</th></tr></thead>
    <tbody>${crumbs.map((crumb, index) => html`<tr key=${index}>
      <td class="meta" title=${text(crumb.timestamp)}>${before(crumb.timestamp, event.timestamp)}</td>
      <td>${LABELS[crumb.type] || text(crumb.type) || "—"}</td>
      <td class="mono event-message">${text(crumb.message)}</td></tr>`)}</tbody>
  </table>`;
}
