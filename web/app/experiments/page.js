// Flags and experiments (`/experiments`): the flags served to browsers with their JSON values,
// and the experiments with their variants and weights, each opening its results. Admins set,
// edit and delete flags, and create, edit, switch, archive and bring back experiments; archived
// experiments are hidden unless `archived=1` is in the URL.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { setQuery } from "../router.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { ActionButton } from "../components/form.js";
import { StatusPill } from "../components/status.js";
import { Time } from "../components/time.js";
import { toast } from "../components/toast.js";
import { FlagForm, ExperimentDialog, valueText } from "./forms.js";

function Flags() {
  const flags = useLoad((signal) => api("/api/v1/flags", { signal, query: { limit: 500 } }), []);
  const [editing, setEditing] = useState(null);
  const items = (flags.data && flags.data.items) || [];
  const remove = (name) => api(`/api/v1/flags/${encodeURIComponent(name)}`, { method: "DELETE" });
  return html`<${Panel} title="Flags">
    <${LoadProblem} problem=${flags.problem} retry=${flags.reload} />
    ${flags.data && !items.length && html`<p class="meta">No flags yet. ${isAdmin.value
      ? "Set one below: browsers read it from /ingest/ab-config at once."
      : "An admin sets them; browsers read them from /ingest/ab-config."}</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Flags</caption>
      <thead><tr><th scope="col">Flag</th><th scope="col">Value</th><th scope="col">Changed</th>
        ${isAdmin.value && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${items.map((flag) => html`<tr key=${flag.name}>
        <td class="mono">${flag.name}</td>
        <td class="mono">${valueText(flag.value)}</td>
        <td><${Time} at=${flag.updated_at} /></td>
        ${isAdmin.value && html`<td><div class="row-actions">
          <button type="button" onClick=${() => setEditing(flag)} aria-label=${`Edit flag ${flag.name}`}>Edit</button>
          <${ActionButton} kind="danger" action=${() => remove(flag.name)} aria-label=${`Delete flag ${flag.name}`}
            onDone=${() => { toast(`Flag ${flag.name} deleted`); flags.reload(); }}>Delete</${ActionButton}>
        </div></td>`}
      </tr>`)}</tbody></table>`}
    ${isAdmin.value && html`<h3>${editing ? `Change flag ${editing.name}` : "Set a flag"}</h3>
      <${FlagForm} key=${editing ? editing.name : "new"} editing=${editing} onDone=${() => { setEditing(null); flags.reload(); }} />`}
  </${Panel}>`;
}

const stateOf = (experiment) => (experiment.archived ? "archived" : experiment.active ? "active" : "off");

/** "control 50% · blue 50%": each variant with its share of the weights. */
function shares(variants) {
  const total = variants.reduce((sum, v) => sum + v.weight, 0) || 1;
  return variants.map((v) => `${v.key} ${v.weight} (${Math.round((v.weight / total) * 100)}%)`).join(" · ");
}

/** A button sending one PATCH to the experiment, named for the person and for screen readers. */
function PatchButton({ experiment, body, text, done, reload }) {
  return html`<${ActionButton} action=${() => api(`/api/v1/experiments/${encodeURIComponent(experiment.key)}`, { method: "PATCH", body })}
    aria-label=${`${text} ${experiment.key}`} onDone=${() => { toast(`Experiment ${experiment.key} ${done}`); reload(); }}>${text}</${ActionButton}>`;
}

function ExperimentActions({ experiment, edit, reload }) {
  const button = (body, text, done) => html`<${PatchButton} experiment=${experiment} body=${body} text=${text} done=${done} reload=${reload} />`;
  if (experiment.archived) return html`<div class="row-actions">${button({ archived: false }, "Unarchive", "brought back (off)")}</div>`;
  return html`<div class="row-actions">
    <button type="button" onClick=${() => edit(experiment)} aria-label=${`Edit experiment ${experiment.key}`}>Edit</button>
    ${experiment.active ? button({ active: false }, "Switch off", "switched off") : button({ active: true }, "Switch on", "switched on")}
    ${button({ archived: true }, "Archive", "archived")}
  </div>`;
}

function Experiments({ showArchived }) {
  const list = useLoad((signal) => api("/api/v1/experiments", { signal, query: { limit: 500 } }), []);
  const [dialog, setDialog] = useState(null);
  const all = (list.data && list.data.items) || [];
  const items = all.filter((experiment) => showArchived || !experiment.archived);
  const archivedCount = all.length - all.filter((experiment) => !experiment.archived).length;
  const done = () => { setDialog(null); list.reload(); };
  const actions = html`<div class="row-actions">
    <label class="choice"><input type="checkbox" checked=${showArchived}
      onChange=${(event) => setQuery({ archived: event.currentTarget.checked ? "1" : null })} /> ${`Show archived (${archivedCount})`}</label>
    ${isAdmin.value && html`<button type="button" class="primary" onClick=${() => setDialog({})}>New experiment</button>`}</div>`;
  return html`<${Panel} title="Experiments" actions=${actions}>
    <${LoadProblem} problem=${list.problem} retry=${list.reload} />
    ${list.data && !items.length && html`<p class="meta">${all.length ? "Every experiment is archived." : "No experiments yet."}
      ${isAdmin.value ? " Create one with New experiment: browsers split visitors by its variants' weights." : ""}</p>`}
    ${items.length > 0 && html`<table>
      <caption class="visually-hidden">Experiments</caption>
      <thead><tr><th scope="col">Experiment</th><th scope="col">State</th><th scope="col">Variants and weights</th><th scope="col">Changed</th>
        ${isAdmin.value && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${items.map((experiment) => html`<tr key=${experiment.key}>
        <td><a class="cell-link mono" href=${`/experiments/${encodeURIComponent(experiment.key)}`}>${experiment.key}</a></td>
        <td><${StatusPill} status=${stateOf(experiment)} /></td>
        <td>${shares(experiment.variants)}</td>
        <td><${Time} at=${experiment.updated_at} /></td>
        ${isAdmin.value && html`<td><${ExperimentActions} experiment=${experiment} edit=${(e) => setDialog({ experiment: e })} reload=${list.reload} /></td>`}
      </tr>`)}</tbody></table>`}
    ${dialog && html`<${ExperimentDialog} experiment=${dialog.experiment} onClose=${() => setDialog(null)} onDone=${done} />`}
  </${Panel}>`;
}

export default function ExperimentsPage({ query }) {
  return html`<div>
    <${PageHeader} title="Flags and experiments" />
    <p class="meta">Browsers read both from <code>/ingest/ab-config</code> with an ingest key; a change shows there at once.</p>
    <${Flags} />
    <${Experiments} showArchived=${query.get("archived") === "1"} />
  </div>`;
}
