// The forms of the flags and experiments page (admins only): set a flag (its value is JSON), and
// create or edit an experiment (variants with weights, on or off) in a dialog.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { Dialog } from "../components/dialog.js";
import { toast } from "../components/toast.js";

/** The JSON value typed in a flag's field, or an error in words. */
export function parseValue(text) {
  const trimmed = text.trim();
  if (!trimmed) return { error: "Enter a value: true, false, a number or \"text\" in quotes." };
  try {
    const value = JSON.parse(trimmed);
    if (value === null) return { error: "A flag cannot be null: delete it instead." };
    return { value };
  } catch {
    return { error: "Not JSON: put text in double quotes (\"blue\"), or use true, false or a number." };
  }
}

/** A flag as it is typed back into the form. */
export const valueText = (value) => JSON.stringify(value);

/** Set a flag: a name and a JSON value. `editing` fills it with a flag to change. */
export function FlagForm({ editing, onDone }) {
  const [name, setName] = useState(editing ? editing.name : "");
  const [text, setText] = useState(editing ? valueText(editing.value) : "");
  const [fieldError, setFieldError] = useState(null);
  const { busy, problem, submit } = useSubmit(async () => {
    const parsed = parseValue(text);
    setFieldError(parsed.error || null);
    if (parsed.error) return;
    await api(`/api/v1/flags/${encodeURIComponent(name.trim())}`, { method: "PUT", body: { value: parsed.value } });
    toast(`Flag ${name.trim()} set`);
    setName("");
    setText("");
    onDone();
  });
  return html`<form class="inline-form" aria-label="Set a flag" onSubmit=${submit}>
    <${ErrorSummary} problem=${problem} />
    <${Field} label="Flag name" value=${name} onInput=${setName} required autocomplete="off" class="mono" />
    <${Field} label="Flag value" value=${text} onInput=${setText} error=${fieldError} required autocomplete="off" class="mono"
      help=${"JSON: true, false, 42 or \"text\""} />
    <button type="submit" class="primary" disabled=${busy}>Set flag</button>
  </form>`;
}

const blankVariants = () => [{ key: "control", weight: "50" }, { key: "", weight: "50" }];

/** The variants typed in, or an error in words. */
function readVariants(rows) {
  const variants = rows.map((row) => ({ key: row.key.trim(), weight: Number(row.weight) }));
  if (!variants.length) return { error: "Add at least one variant." };
  if (variants.some((v) => !v.key)) return { error: "Every variant needs a key." };
  if (variants.some((v) => !Number.isInteger(v.weight) || v.weight < 0)) return { error: "Weights are whole numbers of 0 or more." };
  if (!variants.some((v) => v.weight > 0)) return { error: "At least one weight must be above 0." };
  return { variants };
}

/** Create (no `experiment`) or edit an experiment, in a dialog. */
export function ExperimentDialog({ experiment, onClose, onDone }) {
  const [key, setKey] = useState(experiment ? experiment.key : "");
  const [rows, setRows] = useState(experiment ? experiment.variants.map((v) => ({ key: v.key, weight: String(v.weight) })) : blankVariants());
  const [active, setActive] = useState(experiment ? experiment.active : true);
  const [variantError, setVariantError] = useState(null);
  const change = (index, field) => (value) => setRows(rows.map((row, i) => (i === index ? { ...row, [field]: value } : row)));
  const { busy, problem, submit } = useSubmit(async () => {
    const read = readVariants(rows);
    setVariantError(read.error || null);
    if (read.error) return;
    if (experiment) {
      await api(`/api/v1/experiments/${encodeURIComponent(experiment.key)}`, { method: "PATCH", body: { variants: read.variants, active } });
      toast(`Experiment ${experiment.key} saved`);
    } else {
      await api("/api/v1/experiments", { method: "POST", body: { key: key.trim(), variants: read.variants, active } });
      toast(`Experiment ${key.trim()} created`);
    }
    onDone();
  });
  return html`<${Dialog} title=${experiment ? `Edit experiment ${experiment.key}` : "New experiment"} onClose=${onClose}>
    <form onSubmit=${submit}>
      <${ErrorSummary} problem=${problem} />
      ${!experiment && html`<${Field} label="Experiment key" value=${key} onInput=${setKey} required autocomplete="off" class="mono"
        help="1 to 64 letters, digits, _ . : or -; the SDK asks for it by this key." />`}
      <fieldset class="choices"><legend>Variants and weights</legend>
        ${variantError && html`<p class="field-error">${variantError}</p>`}
        ${rows.map((row, index) => html`<div class="variant-row" key=${index}>
          <${Field} label=${`Variant ${index + 1} key`} value=${row.key} onInput=${change(index, "key")} autocomplete="off" class="mono" />
          <${Field} label=${`Variant ${index + 1} weight`} value=${row.weight} onInput=${change(index, "weight")} inputmode="numeric" />
          ${rows.length > 1 && html`<button type="button" class="quiet field" onClick=${() => setRows(rows.filter((_, i) => i !== index))}
            aria-label=${`Remove variant ${index + 1}`}>Remove</button>`}
        </div>`)}
        <button type="button" onClick=${() => setRows([...rows, { key: "", weight: "0" }])}>Add variant</button>
      </fieldset>
      <label class="choice"><input type="checkbox" checked=${active} onChange=${(event) => setActive(event.currentTarget.checked)} /> Active (served to browsers)</label>
      <p><button type="submit" class="primary" disabled=${busy}>${experiment ? "Save experiment" : "Create experiment"}</button></p>
    </form>
  </${Dialog}>`;
}
