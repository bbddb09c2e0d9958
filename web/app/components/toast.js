// Success messages that leave by themselves, announced by a polite live region.
import { signal } from "@preact/signals";
import { html } from "../html.js";

const toasts = signal([]);
let next = 0;

export function toast(text) {
  const id = ++next;
  toasts.value = [...toasts.value, { id, text }];
  setTimeout(() => { toasts.value = toasts.value.filter((item) => item.id !== id); }, 5000);
}

export function Toasts() {
  return html`<div class="toasts" role="status" aria-live="polite">
    ${toasts.value.map((item) => html`<p class="toast" key=${item.id}>${item.text}</p>`)}
  </div>`;
}
