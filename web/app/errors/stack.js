// The stack of an error event, the hero of the error-group page: frames innermost first, each
// with its function in bold and `file:line:column` (the original ones when a source map
// resolved it, with the source lines around it and the frame's line highlighted). In-app frames
// are open; library frames (node_modules, vendor, native) fold into runs that open on demand.
import { useState } from "preact/hooks";
import { html } from "../html.js";

const LIBRARY_FILE = /(^|[/\\])(node_modules|vendor|bower_components)[/\\]|^node:|^[a-z-]+-extension:|\[native code\]|^<anonymous>$|^native$/;

/** Whether a frame is the application's own code (the client's `in_app` wins when it sent one). */
export function isInApp(frame) {
  if (frame.in_app === true || frame.in_app === false) return frame.in_app;
  const files = [frame.file, frame.resolved && frame.resolved.file].filter(Boolean);
  return !!frame.line && !files.some((file) => LIBRARY_FILE.test(file));
}

/** Where a run of library frames comes from, in a word ("node_modules", "vendor", "libraries"). */
function origin(frames) {
  const files = frames.map((frame) => (frame.resolved && frame.resolved.file) || frame.file || "");
  for (const name of ["node_modules", "vendor"]) {
    if (files.every((file) => file.includes(name))) return name;
  }
  return files.every((file) => !file || /native|anonymous/.test(file)) ? "native code" : "libraries";
}

/** Consecutive library frames become one run; each in-app frame stands alone. */
export function runsOf(frames) {
  const runs = [];
  frames.forEach((frame, index) => {
    const inApp = isInApp(frame);
    const last = runs[runs.length - 1];
    if (!inApp && last && !last.inApp) last.frames.push({ frame, index });
    else runs.push({ inApp, frames: [{ frame, index }] });
  });
  return runs;
}

const place = (where) => [where.file || "<unknown>", where.line, where.column].filter((part) => part !== undefined && part !== null).join(":");

function SourceLines({ context, line }) {
  const pre = context.pre || [];
  const post = context.post || [];
  const first = line - pre.length;
  const rows = [...pre, context.line, ...post];
  return html`<div class="frame-source" role="group" aria-label=${`Source around line ${line}`}>
    ${rows.map((text, i) => {
      const number = first + i;
      const current = number === line;
      return html`<div class=${current ? "line current" : "line"}>
        <span class="line-no">${number}</span><code>${current && html`<span class="visually-hidden">current line: </span>`}${text}</code></div>`;
    })}
  </div>`;
}

function Frame({ frame }) {
  const resolved = frame.resolved;
  const where = resolved || frame;
  const name = (resolved && resolved.function) || frame.function || "<anonymous>";
  return html`<li class="frame">
    <div class="frame-title">
      ${frame.async && html`<span class="meta">async </span>`}<strong>${name}</strong>
      <span class="frame-place"> ${place(where)}</span>
      ${resolved && html`<span class="meta"> (minified: ${frame.function ? `${frame.function} ` : ""}${place(frame)})</span>`}
    </div>
    ${resolved && resolved.context && resolved.context.line !== undefined && html`<${SourceLines} context=${resolved.context} line=${resolved.line} />`}
  </li>`;
}

function LibraryRun({ frames }) {
  const [open, setOpen] = useState(false);
  const label = `${frames.length} ${frames.length === 1 ? "frame" : "frames"} from ${origin(frames.map((item) => item.frame))}`;
  return html`<li class="frame-run">
    <button type="button" class="link" aria-expanded=${open ? "true" : "false"} onClick=${() => setOpen(!open)}>
      ${open ? "Hide" : "Show"} ${label}</button>
    ${open && html`<ol class="frames">${frames.map(({ frame, index }) => html`<${Frame} key=${index} frame=${frame} />`)}</ol>`}
  </li>`;
}

/** The event's frames (or, with the toggle, the raw stack as the browser wrote it). */
export function Stack({ event }) {
  const [raw, setRaw] = useState(false);
  const frames = event.frames || [];
  const rawText = event.stack || frames.map((frame) => `    at ${frame.function || "<anonymous>"} (${place(frame)})`).join("\n");
  return html`<div class="stack">
    <p class="stack-head"><span><strong>${event.name || "Error"}</strong>: ${event.message}</span>
      <button type="button" class="quiet" aria-pressed=${raw ? "true" : "false"} onClick=${() => setRaw(!raw)}>Raw stack</button></p>
    ${raw ? html`<pre class="raw-stack">${rawText}</pre>`
      : frames.length === 0 ? html`<p class="meta">This event carries no stack.</p>`
      : html`<ol class="frames">${runsOf(frames).map((run) => (run.inApp
        ? html`<${Frame} key=${run.frames[0].index} frame=${run.frames[0].frame} />`
        : html`<${LibraryRun} key=${`run-${run.frames[0].index}`} frames=${run.frames} />`))}</ol>`}
  </div>`;
}
