// A group's tags as bar lists (`GET /api/v1/error-groups/{id}/tags`): for each key its top
// values with their share of the sampled events, the bar's length set through CSSOM (the CSP
// allows no style attributes in markup).
import { html } from "../html.js";

const percent = (count, total) => (total ? Math.round((count / total) * 100) : 0);

function BarList({ tag, index }) {
  return html`<div class="tag">
    <h3 id=${`tag-${index}`}>${tag.key}</h3>
    <ul class="bars" aria-labelledby=${`tag-${index}`}>
      ${tag.values.map((item) => html`<li>
        <span class="bar" style=${{ width: `${percent(item.count, tag.total)}%` }}></span>
        <span class="mono">${item.value}</span>
        <span class="number">${item.count.toLocaleString()} · ${percent(item.count, tag.total)}%</span>
      </li>`)}
    </ul>
  </div>`;
}

export function TagBars({ data }) {
  const items = (data && data.items) || [];
  if (!items.length) return html`<p class="meta">No tags on this group's events.</p>`;
  return html`<div>
    ${items.map((tag, index) => html`<${BarList} key=${tag.key} tag=${tag} index=${index} />`)}
    <p class="meta">From the ${data.sampled_events.toLocaleString()} newest events.</p>
  </div>`;
}
