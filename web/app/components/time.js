// Times in the browser's zone, relative when recent, with the UTC value on hover.
import { html } from "../html.js";

const units = [["year", 31536e6], ["month", 2592e6], ["week", 6048e5], ["day", 864e5],
  ["hour", 36e5], ["minute", 6e4], ["second", 1e3]];
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const absoluteFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function relative(at, now = Date.now()) {
  const delta = new Date(at).getTime() - now;
  for (const [unit, ms] of units) {
    if (Math.abs(delta) >= ms || unit === "second") {
      return relativeFormat.format(Math.round(delta / ms), unit);
    }
  }
  return "";
}

export const local = (at) => absoluteFormat.format(new Date(at));
export const utc = (at) => new Date(at).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");

/** `<Time at=… />`: relative (or absolute with `absolute`), the UTC time as its title. */
export function Time({ at, absolute = false }) {
  if (!at) return html`<span class="meta">never</span>`;
  return html`<time datetime=${at} title=${utc(at)}>${absolute ? local(at) : relative(at)}</time>`;
}

/** A duration in milliseconds as a person says it. */
export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60000);
  return minutes < 60 ? `${minutes} min ${Math.round((ms % 60000) / 1000)} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
