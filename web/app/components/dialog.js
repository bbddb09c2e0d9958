// A modal dialog: traps focus while open, Escape closes it, focus returns where it was.
import { useEffect, useRef } from "preact/hooks";
import { html } from "../html.js";

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex='-1'])";

export function Dialog({ title, onClose, children }) {
  const box = useRef(null);
  useEffect(() => {
    const before = document.activeElement;
    const first = box.current.querySelector(FOCUSABLE);
    (first || box.current).focus();
    const onKey = (event) => {
      if (event.key === "Escape") { event.preventDefault(); onClose(); return; }
      if (event.key !== "Tab") return;
      const items = [...box.current.querySelectorAll(FOCUSABLE)];
      if (!items.length) return;
      const [head, tail] = [items[0], items[items.length - 1]];
      if (event.shiftKey && document.activeElement === head) { event.preventDefault(); tail.focus(); }
      else if (!event.shiftKey && document.activeElement === tail) { event.preventDefault(); head.focus(); }
    };
    document.addEventListener("keydown", onKey);
    return () => { document.removeEventListener("keydown", onKey); if (before && before.focus) before.focus(); };
  }, []);
  return html`<div class="backdrop" onClick=${(event) => event.target === event.currentTarget && onClose()}>
    <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="dialog-title" tabindex="-1" ref=${box}>
      <header><h2 id="dialog-title">${title}</h2>
        <button type="button" class="quiet" onClick=${onClose} aria-label="Close">×</button></header>
      ${children}
    </div>
  </div>`;
}
