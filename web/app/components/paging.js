// Cursor paging kept in the URL: "Next page" puts the server's cursor in a query parameter, and
// the cursor each page came from is remembered so "Previous page" can go back; a page opened
// cold from a link offers "First page" instead.
import { html } from "../html.js";
import { setQuery } from "../router.js";

const cameFrom = new Map();
const memoryKey = (param, cursor) => `${window.location.pathname}|${param}|${cursor}`;

/** `cursor`: this page's (from the URL), `nextCursor`: the server's; `param`: the URL parameter. */
export function CursorPaging({ cursor, nextCursor, param = "cursor", label = "Pages" }) {
  if (!cursor && !nextCursor) return null;
  const goNext = () => {
    cameFrom.set(memoryKey(param, nextCursor), cursor || "");
    setQuery({ [param]: nextCursor }, { replace: false });
  };
  const back = cursor ? cameFrom.get(memoryKey(param, cursor)) : undefined;
  return html`<nav class="paging" aria-label=${label}>
    ${cursor && html`<button type="button" onClick=${() => setQuery({ [param]: back || null }, { replace: false })}>
      ${back === undefined ? "First page" : "Previous page"}</button>`}
    ${nextCursor && html`<button type="button" onClick=${goNext}>Next page</button>`}
  </nav>`;
}
