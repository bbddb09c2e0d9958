// Status pills: a colour and always the word, never colour alone.
import { html } from "../html.js";

const tone = {
  unresolved: "error", firing: "error", open: "error", failed: "error", offline: "muted",
  pending: "warning", acknowledged: "warning", investigating: "warning", running: "info",
  resolved: "ok", ok: "ok", succeeded: "ok", success: "ok", online: "ok", ignored: "muted",
};

export function StatusPill({ status }) {
  return html`<span class=${`pill pill-${tone[status] || "info"}`}>${status}</span>`;
}
