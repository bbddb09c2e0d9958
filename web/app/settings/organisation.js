// The Organisation settings page (`/settings`): the name, the plan (the operator's), two-factor
// enforcement and the IP allowlist. Admins change them; everyone else reads them. Saving an
// allowlist that leaves out the admin's own address asks first (409 `would_lock_out`), saying
// which address that is, and "Save anyway" sends `force`.
import { useEffect, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me, isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Facts, Panel, LoadProblem } from "../components/page.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { Dialog } from "../components/dialog.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "./frame.js";

const PLAN = { free: "Free", enterprise: "Enterprise" };
const TWO_FACTOR_EFFECT = "Members without a second factor can then open nothing but their profile, where they set one up; API keys follow the member who made them.";

/** Keeps the signed-in view of the organisation (top bar, profile) in step with a save. */
function noteOrg(name, settings) {
  me.value = { ...me.value, org: { ...me.value.org, name, two_factor_required: settings.two_factor_required } };
}

// The name and plan are the organisation's own (`me`); the settings object holds the rest.
function General({ settings, onSaved }) {
  const [name, setName] = useState(me.value.org.name);
  const [required, setRequired] = useState(settings.two_factor_required);
  const form = useSubmit(async () => {
    const saved = await api("/api/v1/orgs/me/settings", { method: "PATCH", body: { name, two_factor_required: required } });
    noteOrg(name.trim(), saved);
    onSaved(saved);
    toast("Organisation settings saved.");
  });
  const selfWithout = required && !settings.two_factor_required && !me.value.user.two_factor_enabled;
  return html`<form onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title="The settings were not saved" />
    <${Field} label="Organisation name" required maxlength="100" value=${name} onInput=${setName}
      help="Shown in the top bar and in invitations; unique on this server." />
    <div class="field">
      <div class="choice">
        <input type="checkbox" id="two-factor-required" checked=${required} aria-describedby="two-factor-effect"
          onChange=${(event) => setRequired(event.currentTarget.checked)} />
        <label for="two-factor-required">Require two-factor authentication</label>
      </div>
      <p class="help" id="two-factor-effect">${TWO_FACTOR_EFFECT}</p>
    </div>
    ${selfWithout && html`<p class="notice" role="status">You have no second factor yet: after saving, you too will be asked to set one up before anything else.</p>`}
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Saving…" : "Save settings"}</button>
  </form>`;
}

/** The address in a `would_lock_out` detail ("your address 192.0.2.7 is not in this list…"). */
function lockedOutAddress(problem) {
  const found = /address (\S+) is not/.exec(problem.detail || "");
  return found ? found[1] : null;
}

const linesOf = (text) => text.split("\n").map((line) => line.trim()).filter(Boolean);

function Allowlist({ cidrs, onSaved }) {
  const [text, setText] = useState(cidrs.join("\n"));
  const [lockOut, setLockOut] = useState(null);
  const [cancelled, setCancelled] = useState(false);
  useEffect(() => setText(cidrs.join("\n")), [cidrs.join(",")]);
  const save = async (force) => {
    const answer = await api("/api/v1/orgs/me/ip-allowlist", { method: "PUT", body: { cidrs: linesOf(text), force } });
    setLockOut(null);
    onSaved(answer.cidrs);
    toast(answer.cidrs.length ? "IP allowlist saved." : "IP allowlist turned off.");
  };
  const form = useSubmit(async () => {
    setCancelled(false);
    try {
      await save(false);
    } catch (problem) {
      if (problem.code !== "would_lock_out") throw problem;
      setLockOut(problem);
    }
  });
  const forced = useSubmit(() => save(true));
  const cancel = () => { setLockOut(null); setCancelled(true); };
  const address = lockOut && lockedOutAddress(lockOut);
  return html`<form onSubmit=${form.submit} novalidate>
    <${ErrorSummary} problem=${form.problem} title="The allowlist was not saved" />
    <div class="field">
      <label for="ip-allowlist">Allowed networks</label>
      <p class="help" id="ip-allowlist-help">One IPv4 or IPv6 address or CIDR per line (such as <code>10.0.0.0/8</code>).
        Requests to the API from anywhere else are refused, sessions and API keys alike. Empty: no restriction.</p>
      <textarea id="ip-allowlist" rows="6" class="mono" spellcheck="false" aria-describedby="ip-allowlist-help"
        value=${text} onInput=${(event) => setText(event.currentTarget.value)}></textarea>
    </div>
    ${cancelled && html`<p class="notice" role="status">Not saved: the allowlist in force is unchanged.</p>`}
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Saving…" : "Save allowlist"}</button>
    ${lockOut && html`<${Dialog} title="This list would lock you out" onClose=${cancel}>
      <p>${address
        ? html`Your address, <code>${address}</code>, is not in this list.`
        : "Your own address is not in this list."} Once it is saved, your next request is refused, and so is
        everyone else's from that address: only an admin elsewhere, or the operator, can change it back.</p>
      <p>Add your address to the list to keep access, or save it anyway.</p>
      <${ErrorSummary} problem=${forced.problem} title="The allowlist was not saved" />
      <div class="page-actions">
        <button type="button" onClick=${cancel}>Cancel</button>
        <button type="button" class="danger" disabled=${forced.busy} onClick=${forced.submit}>${forced.busy ? "Saving…" : "Save anyway"}</button>
      </div>
    <//>`}
  </form>`;
}

function ReadOnly({ settings }) {
  const list = settings.ip_allowlist;
  return html`<div>
    <${Panel} title="Two-factor authentication">
      <p><span class=${`pill ${settings.two_factor_required ? "pill-ok" : "pill-muted"}`}>${settings.two_factor_required ? "Required" : "Not required"}</span>
        ${" "}${settings.two_factor_required ? TWO_FACTOR_EFFECT : "Each member chooses whether to use a second factor."}</p>
    <//>
    <${Panel} title="IP allowlist">
      ${list.length
        ? html`<p>The API answers requests from these networks only:</p><ul class="plain-list mono">${list.map((cidr) => html`<li key=${cidr}>${cidr}</li>`)}</ul>`
        : html`<p>Off: the API answers requests from any address.</p>`}
    <//>
    <p class="meta">Admins change these settings.</p>
  </div>`;
}

export default function OrganisationPage() {
  const loaded = useLoad((signal) => api("/api/v1/orgs/me/settings", { signal }), []);
  const [settings, setSettings] = useState(null);
  useEffect(() => { if (loaded.data) setSettings(loaded.data); }, [loaded.data]);
  const admin = isAdmin.value;
  return html`<${SettingsFrame} current="organisation">
    <${PageHeader} title="Organisation" />
    <${LoadProblem} problem=${loaded.problem} retry=${loaded.reload} />
    ${settings && html`<div class="narrow">
      <${Facts} facts=${[["Name", me.value.org.name], ["Plan", PLAN[me.value.org.plan] || me.value.org.plan],
        ["Two-factor", settings.two_factor_required ? "Required" : "Not required"],
        ["IP allowlist", settings.ip_allowlist.length ? `${settings.ip_allowlist.length} networks` : "Off"]]} />
      ${admin ? html`
        <${Panel} title="General"><${General} settings=${settings} onSaved=${setSettings} /><//>
        <${Panel} title="IP allowlist">
          <${Allowlist} cidrs=${settings.ip_allowlist} onSaved=${(cidrs) => setSettings({ ...settings, ip_allowlist: cidrs })} />
        <//>
        <p class="meta">The plan is set by the server's operator (<code>lookout org set-plan</code>).</p>`
      : html`<${ReadOnly} settings=${settings} />`}
    </div>`}
  <//>`;
}
