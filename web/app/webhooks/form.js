// The channel form, for creating a channel (webhooks list) and changing one (channel page):
// name, URL, the events it hears (every event, or chosen events and `prefix.*` patterns), the
// write-only signing secret (kept, replaced or cleared on edit) and whether it is enabled.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";

// The event filter's choices: each family's pattern first, then its events.
const EVENT_CHOICES = [
  ["alert.*", "Every alert event"], ["alert.fired", "alert.fired"], ["alert.resolved", "alert.resolved"],
  ["alert.acknowledged", "alert.acknowledged"],
  ["incident.*", "Every incident event"], ["incident.opened", "incident.opened"],
  ["incident.updated", "incident.updated"], ["incident.resolved", "incident.resolved"],
  ["deployment.*", "Every deployment event"], ["deployment.started", "deployment.started"],
  ["deployment.finished", "deployment.finished"],
];

/** What a channel's filter says in words: "every event" or its entries. */
export function eventsText(events) {
  return events.includes("*") ? "every event" : events.join(", ");
}

function EventFilter({ every, setEvery, chosen, setChosen }) {
  const toggle = (value) => setChosen(chosen.includes(value) ? chosen.filter((v) => v !== value) : [...chosen, value]);
  return html`<fieldset class="choices">
    <legend>Events</legend>
    <label class="choice"><input type="radio" name="events-scope" checked=${every} onChange=${() => setEvery(true)} />
      Every event</label>
    <label class="choice"><input type="radio" name="events-scope" checked=${!every} onChange=${() => setEvery(false)} />
      Only the events chosen below</label>
    ${!every && html`<div class="event-choices">${EVENT_CHOICES.map(([value, text]) => html`<label class="choice" key=${value}>
      <input type="checkbox" checked=${chosen.includes(value)} onChange=${() => toggle(value)} />
      <span class=${value.endsWith("*") ? "" : "mono"}>${text}</span></label>`)}</div>`}
  </fieldset>`;
}

const SECRET_CHOICES = [["keep", "Keep the secret that is set"], ["replace", "Replace it"], ["clear", "Remove it (send unsigned)"]];

function SecretChoice({ secretMode, setSecretMode }) {
  return html`<fieldset class="choices">
    <legend>Signing secret</legend>
    <p class="help">A secret is set. It is never shown again.</p>
    ${SECRET_CHOICES.map(([value, text]) => html`<label class="choice" key=${value}>
      <input type="radio" name="secret-mode" checked=${secretMode === value} onChange=${() => setSecretMode(value)} />
      ${text}</label>`)}
  </fieldset>`;
}

/**
 * `channel`: the channel being changed (absent to create one). `save(body)` sends the request
 * body (only the changed secret on edit); `submitText` names the button.
 */
export function ChannelForm({ channel, save, submitText, problemTitle }) {
  const [name, setName] = useState(channel ? channel.name : "");
  const [address, setAddress] = useState(channel ? channel.url : "");
  const [every, setEvery] = useState(!channel || channel.events.includes("*"));
  const [chosen, setChosen] = useState(channel && !channel.events.includes("*") ? channel.events : []);
  const [secret, setSecret] = useState("");
  const [secretMode, setSecretMode] = useState(channel && channel.has_signing_secret ? "keep" : "replace");
  const [enabled, setEnabled] = useState(channel ? channel.enabled : true);
  const form = useSubmit(async () => {
    if (!every && !chosen.length) throw { detail: "Choose at least one event, or choose every event." };
    const body = { name: name.trim(), url: address.trim(), events: every ? ["*"] : chosen, enabled };
    if (secretMode === "replace" && secret) body.signing_secret = secret;
    if (secretMode === "clear") body.signing_secret = null;
    await save(body);
    setSecret("");
  });
  return html`<form onSubmit=${form.submit} novalidate class="channel-form">
    <${ErrorSummary} problem=${form.problem} title=${problemTitle} />
    <${Field} label="Name" required value=${name} onInput=${setName} help="How people and alert rules refer to it, such as ops-pager." />
    <${Field} label="URL" type="url" required spellcheck="false" value=${address} onInput=${setAddress}
      help="Lookout POSTs each event here as JSON." />
    <${EventFilter} every=${every} setEvery=${setEvery} chosen=${chosen} setChosen=${setChosen} />
    ${channel && channel.has_signing_secret && html`<${SecretChoice} secretMode=${secretMode} setSecretMode=${setSecretMode} />`}
    ${secretMode === "replace" && html`<${Field} label=${channel && channel.has_signing_secret ? "New signing secret" : "Signing secret (optional)"}
      type="password" autocomplete="new-password" spellcheck="false" value=${secret} onInput=${setSecret}
      help="With a secret, each request carries X-Lookout-Signature: the HMAC-SHA256 of the body. Write-only." />`}
    <label class="choice"><input type="checkbox" checked=${enabled} onChange=${(e) => setEnabled(e.currentTarget.checked)} /> Enabled</label>
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Saving…" : submitText}</button>
  </form>`;
}

/** A delivery's state as a pill: the word, coloured. */
export function DeliveryState({ state }) {
  const tone = { delivered: "ok", dead: "error", pending: "warning", cancelled: "muted" }[state] || "info";
  return html`<span class=${`pill pill-${tone}`}>${state}</span>`;
}
