// Copy to the clipboard, with a word of confirmation.
import { useState } from "preact/hooks";
import { html } from "../html.js";

export function CopyButton({ text, label = "Copy" }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard refused (no secure context): leave the text selectable for the person to copy.
      return;
    }
    setDone(true);
    setTimeout(() => setDone(false), 2000);
  };
  return html`<button type="button" class="quiet" onClick=${copy} aria-label=${label}>${done ? "Copied" : label}</button>`;
}

/** A secret shown once: read-only, with Copy and the warning that it will not be shown again. */
export function SecretOnce({ label, value }) {
  return html`<div class="secret">
    <label>${label}<input readonly value=${value} class="mono" onFocus=${(e) => e.currentTarget.select()} /></label>
    <${CopyButton} text=${value} label=${`Copy ${label.toLowerCase()}`} />
    <p class="warning">This will not be shown again. Keep it somewhere safe now.</p>
  </div>`;
}

/** A block of code (a command, a snippet) with a Copy button. */
export function CodeBlock({ code, label = "Copy" }) {
  return html`<div class="code-block"><pre><code>${code}</code></pre><${CopyButton} text=${code} label=${label} /></div>`;
}
