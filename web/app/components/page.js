// Pieces every page uses: its title (in the tab and as the one <h1>), its header with the
// primary actions, a facts strip, and the not-found page.
import { useEffect } from "preact/hooks";
import { html } from "../html.js";

export function useTitle(title) {
  useEffect(() => { document.title = title ? `${title} · Lookout` : "Lookout"; }, [title]);
}

export function PageHeader({ title, pill, actions, children }) {
  useTitle(typeof title === "string" ? title : "");
  return html`<header class="page-header">
    <div class="page-title"><h1>${title}</h1>${pill}</div>
    ${actions && html`<div class="page-actions">${actions}</div>`}
    ${children}
  </header>`;
}

/** `facts`: [label, value] pairs shown as a strip under the header. */
export function Facts({ facts }) {
  return html`<dl class="facts">${facts.map(([label, value]) => html`<div><dt>${label}</dt><dd>${value}</dd></div>`)}</dl>`;
}

/** A panel with a heading: the unit of a page's layout (one API request per panel). */
export function Panel({ title, actions, children, id }) {
  const headingId = id || `panel-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return html`<section class="panel" aria-labelledby=${headingId}>
    <header><h2 id=${headingId}>${title}</h2>${actions}</header>
    ${children}
  </section>`;
}

/** A problem met while loading a panel, in words, with a way to try again. */
export function LoadProblem({ problem, retry }) {
  if (!problem) return null;
  return html`<div class="inline-problem" role="alert">
    <p>${problem.detail}</p>${retry && html`<button type="button" onClick=${retry}>Try again</button>`}
  </div>`;
}

export function NotFound() {
  useTitle("Page not found");
  return html`<section><h1>Page not found</h1><p>Nothing lives at this address. <a href="/">Go to the overview</a>.</p></section>`;
}
