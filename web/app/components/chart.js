// Time charts with uPlot, loaded only by pages that draw one: counts over time, deployment
// markers as thin vertical lines with their version in a tooltip, a crosshair with values.
import { useEffect, useRef, useState } from "preact/hooks";
import { html } from "../html.js";

// uPlot's minified build is a classic script defining the global `uPlot` (half the bytes of its
// unminified module build); a <script src> from this origin is what the CSP allows.
const UPLOT = "/vendor/uplot@1.6.32";
let library = null;
function loadLibrary() {
  if (!library) {
    const sheet = document.createElement("link");
    sheet.rel = "stylesheet";
    sheet.href = `${UPLOT}/uPlot.min.css`;
    document.head.appendChild(sheet);
    library = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = `${UPLOT}/uPlot.iife.min.js`;
      script.onload = () => resolve(window.uPlot);
      script.onerror = () => { library = null; reject(new Error("the chart library did not load")); };
      document.head.appendChild(script);
    });
  }
  return library;
}

function markerPlugin(markers, setHover) {
  return {
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        ctx.save();
        ctx.strokeStyle = getComputedStyle(document.documentElement).getPropertyValue("--accent") || "#3056d3";
        ctx.lineWidth = 1;
        for (const marker of markers) {
          const x = u.valToPos(marker.at / 1000, "x", true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
        }
        ctx.restore();
      }],
      setCursor: [(u) => {
        const left = u.cursor.left;
        if (left === null || left < 0) { setHover(null); return; }
        const near = markers.find((marker) => Math.abs(u.valToPos(marker.at / 1000, "x") - left) < 4);
        setHover(near || null);
      }],
    },
  };
}

// Line colours of charts with several series (`lines`), in order; each also has its label in
// the legend, so no line is told apart by colour alone.
const LINE_COLOURS = ["#3056d3", "#b45309", "#b91c1c", "#047857"];

/** uPlot series: one filled series of `counts`, or one line per entry of `lines`. */
function seriesOf(counts, lines, seriesLabel) {
  if (!lines) return [[{ label: seriesLabel, stroke: "#3056d3", fill: "rgba(48,86,211,0.12)", width: 1.5 }], [counts]];
  const options = lines.map((line, index) => ({ label: line.label, stroke: LINE_COLOURS[index % LINE_COLOURS.length], width: 1.5, spanGaps: false,
    points: { show: true, size: 5 } }));
  return [options, lines.map((line) => line.values)];
}

/**
 * `times` in ms, `counts` numbers, `markers` [{at (ms), label}]. With `lines` ([{label, values}],
 * values may be null for gaps) it draws one line per entry instead of `counts`. `label` names
 * the chart for assistive technology; a table of the same data stays available beside it.
 */
export function TimeChart({ times, counts, lines, markers = [], label, height = 180, seriesLabel = "events" }) {
  const box = useRef(null);
  const [hover, setHover] = useState(null);
  useEffect(() => {
    let plot = null;
    let gone = false;
    loadLibrary().then((uPlot) => {
      if (gone || !box.current) return;
      const width = box.current.clientWidth || 600;
      const [options, values] = seriesOf(counts, lines, seriesLabel);
      plot = new uPlot({
        width, height,
        scales: { x: { time: true } },
        axes: [{}, { size: 48 }],
        legend: { show: true },
        plugins: [markerPlugin(markers, setHover)],
        series: [{}, ...options],
      }, [times.map((t) => t / 1000), ...values], box.current);
    });
    const resize = () => plot && box.current && plot.setSize({ width: box.current.clientWidth, height });
    window.addEventListener("resize", resize);
    return () => { gone = true; window.removeEventListener("resize", resize); if (plot) plot.destroy(); };
  }, [times, counts, lines, markers]);
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${label}></div>
    <figcaption class="meta">${hover ? `Deployment ${hover.label}` : label}</figcaption>
  </figure>`;
}
