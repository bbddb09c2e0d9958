// The help popover of the errors search box: what the query language can say, as examples a
// person can click to try. Escape or "Close" puts focus back on the button that opened it.
import { useEffect, useRef } from "preact/hooks";
import { html } from "../html.js";

export const QUERY_EXAMPLES = [
  ["TypeError", "a word in the message, name, stack or URL"],
  ["message:timeout", "a word in the message only"],
  ["stack:computeTotals", "a function or file in the stack"],
  ["release:1.2.0", "one release (also environment:, service:, level:warning)"],
  ["tag.plan:pro", "a tag's value"],
  ["TypeError OR RangeError", "either word (several words must all match)"],
  ["message:timeout AND NOT environment:staging", "AND, OR, NOT and parentheses combine terms"],
];

/** The toggle button; `open` and `setOpen` are the popover's state, owned by the search bar. */
export function QueryHelpButton({ open, setOpen, buttonRef }) {
  return html`<button type="button" class="quiet" ref=${buttonRef} aria-expanded=${open ? "true" : "false"}
    aria-controls="query-help" onClick=${() => setOpen(!open)}>Query help</button>`;
}

/**
 * The popover itself: `use(example)` puts an example in the box and searches for it; `close`
 * returns focus to the toggle, `dismiss` (a click elsewhere) leaves focus where the click put it.
 */
export function QueryHelp({ close, dismiss, use }) {
  const box = useRef(null);
  useEffect(() => {
    const first = box.current && box.current.querySelector("button");
    if (first) first.focus();
    const outside = (event) => {
      if (box.current && !box.current.contains(event.target) && !event.target.closest("[aria-controls=query-help]")) dismiss();
    };
    document.addEventListener("mousedown", outside);
    return () => document.removeEventListener("mousedown", outside);
  }, []);
  const onKey = (event) => { if (event.key === "Escape") { event.preventDefault(); close(); } };
  return html`<div class="popover query-help" id="query-help" role="region" aria-labelledby="query-help-title" ref=${box} onKeyDown=${onKey}>
    <header><h2 id="query-help-title">Query examples</h2>
      <button type="button" class="quiet" onClick=${close}>Close</button></header>
    <dl>
      ${QUERY_EXAMPLES.map(([example, meaning]) => html`<div>
        <dt><button type="button" class="link mono" onClick=${() => use(example)}>${example}</button></dt>
        <dd>${meaning}</dd></div>`)}
    </dl>
    <p class="meta">Fields: message, name, url, stack (words); release, environment, service, level (exact values);
      tag.KEY. The time range and the other filters apply as well.</p>
  </div>`;
}
