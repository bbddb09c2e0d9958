// A 24-bar sparkline without axes, drawn as SVG (no chart library for a table cell).
import { html } from "../html.js";

export function Sparkline({ values = [], label }) {
  const max = Math.max(1, ...values);
  const width = 3;
  return html`<svg class="sparkline" viewBox=${`0 0 ${values.length * (width + 1)} 20`} role="img"
      aria-label=${label || `events per hour, last ${values.length} hours: ${values.reduce((a, b) => a + b, 0)} in all`}>
    ${values.map((value, i) => {
      const height = value ? Math.max(1.5, (value / max) * 20) : 0;
      return html`<rect x=${i * (width + 1)} y=${20 - height} width=${width} height=${height} />`;
    })}
  </svg>`;
}
