// Forms the GOV.UK way: labels above fields, help under them, the error beside the field and
// in a summary at the top; buttons name their action and show when they are busy.
import { useState, useRef, useEffect } from "preact/hooks";
import { html } from "../html.js";

let ids = 0;
const nextId = (prefix) => `${prefix}-${++ids}`;

/** A labelled input. Extra props go to the <input> (type, autocomplete, required, ...). */
export function Field({ label, help, error, value, onInput, id, ...rest }) {
  const [own] = useState(() => id || nextId("field"));
  const described = [help && `${own}-help`, error && `${own}-error`].filter(Boolean).join(" ") || undefined;
  return html`<div class=${`field${error ? " field-invalid" : ""}`}>
    <label for=${own}>${label}</label>
    ${help && html`<p class="help" id=${`${own}-help`}>${help}</p>`}
    ${error && html`<p class="field-error" id=${`${own}-error`}>${error}</p>`}
    <input id=${own} value=${value} onInput=${(event) => onInput && onInput(event.currentTarget.value)}
      aria-invalid=${error ? "true" : undefined} aria-describedby=${described} ...${rest} />
  </div>`;
}

/** A labelled <select> over `options` ([value, text] pairs). */
export function Select({ label, value, onChange, options, id, ...rest }) {
  const [own] = useState(() => id || nextId("select"));
  return html`<div class="field">
    <label for=${own}>${label}</label>
    <select id=${own} value=${value} onChange=${(event) => onChange(event.currentTarget.value)} ...${rest}>
      ${options.map(([option, text]) => html`<option value=${option} selected=${option === value}>${text}</option>`)}
    </select>
  </div>`;
}

/** The summary of what went wrong, focused when it appears so screen readers hear it. */
export function ErrorSummary({ problem, title = "There is a problem" }) {
  const box = useRef(null);
  useEffect(() => { if (problem && box.current) box.current.focus(); }, [problem]);
  if (!problem) return null;
  return html`<div class="error-summary" role="alert" tabindex="-1" ref=${box}>
    <h2>${title}</h2>
    <p>${problem.detail || String(problem)}</p>
  </div>`;
}

/**
 * A button that runs an async action: busy while it runs, its failure shown beside it in words.
 * `onDone(result)` runs after success.
 */
export function ActionButton({ action, onDone, children, kind = "", busyText, ...rest }) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState(null);
  const run = async () => {
    setBusy(true);
    setProblem(null);
    try {
      const result = await action();
      setBusy(false);
      if (onDone) onDone(result);
    } catch (error) {
      setBusy(false);
      setProblem(error);
    }
  };
  return html`<span class="action">
    <button type="button" class=${kind} onClick=${run} disabled=${busy} aria-busy=${busy ? "true" : undefined} ...${rest}>
      ${busy && busyText ? busyText : children}
    </button>
    ${problem && html`<span class="inline-error" role="alert">${problem.detail || String(problem)}</span>`}
  </span>`;
}

/** Runs a form's async submit with a busy flag and the problem it ended with. */
export function useSubmit(task) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState(null);
  const submit = async (event) => {
    if (event) event.preventDefault();
    if (busy) return;
    setBusy(true);
    setProblem(null);
    try {
      await task();
    } catch (error) {
      setProblem(error);
    } finally {
      setBusy(false);
    }
  };
  return { busy, problem, setProblem, submit };
}
