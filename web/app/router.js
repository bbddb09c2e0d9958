// The URL is the state: the current path and query live in one signal, links are intercepted
// so the app never reloads, and `setQuery` keeps filters in the address bar.
import { signal } from "@preact/signals";
import { routes } from "./routes.js";

const read = () => ({ path: window.location.pathname, query: new URLSearchParams(window.location.search) });
export const current = signal(read());

export function navigate(to, { replace = false } = {}) {
  if (to === window.location.pathname + window.location.search) return;
  window.history[replace ? "replaceState" : "pushState"](null, "", to);
  current.value = read();
  if (!replace) window.scrollTo(0, 0);
}

/** Changes some query parameters of the current page (null or "" removes one). */
export function setQuery(changes, { replace = true } = {}) {
  const query = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") query.delete(key);
    else query.set(key, String(value));
  }
  const search = query.toString();
  navigate(window.location.pathname + (search ? `?${search}` : ""), { replace });
}

/** The page URL to come back to after signing in. */
export const here = () => window.location.pathname + window.location.search;

window.addEventListener("popstate", () => { current.value = read(); });

// Same-origin links open in place; modified clicks, downloads and other targets keep the browser's way.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = event.target.closest && event.target.closest("a[href]");
  if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
  const url = new URL(anchor.href, window.location.href);
  if (url.origin !== window.location.origin) return;
  if (/^\/(api|ingest|vendor|assets|sdk|healthz|metrics)(\/|$)/.test(url.pathname)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

/** The route for a path, with its `:name` parameters. */
export function match(path) {
  const parts = path.split("/").filter(Boolean);
  for (const route of routes) {
    const pattern = route.path.split("/").filter(Boolean);
    if (pattern.length !== parts.length) continue;
    const params = {};
    const fits = pattern.every((piece, i) => {
      if (piece.startsWith(":")) { params[piece.slice(1)] = decodeURIComponent(parts[i]); return true; }
      return piece === parts[i];
    });
    if (fits) return { route, params };
  }
  return null;
}
