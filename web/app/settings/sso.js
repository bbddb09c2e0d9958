// The single sign-on page (`/settings/sso`, owners, enterprise plan): what to give the identity
// provider (the OIDC redirect URI, the SAML metadata and ACS URLs), the OpenID Connect and SAML
// settings (the client secret is write-only: left empty it stays as saved), the e-mail domains
// that lead to this organisation's sign-in, the role of people who appear through it, "SSO
// required", and a test sign-in that shows what the provider asserted without changing the session
// (`?sso_test=ok&email=…&mfa=` or `?sso_test=failed&code=…` when it comes back).
import { useEffect, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, Panel, LoadProblem } from "../components/page.js";
import { Field, Select, ErrorSummary, useSubmit } from "../components/form.js";
import { CopyButton } from "../components/copy.js";
import { toast } from "../components/toast.js";
import { SettingsFrame } from "./frame.js";
import { EnterpriseOnly } from "./scim.js";
import { ssoErrorText } from "../auth/login.js";

const ROLES = [["member", "Member"], ["viewer", "Viewer"], ["admin", "Admin"]];
const linesOf = (text) => text.split(/[\n,]/).map((line) => line.trim().toLowerCase()).filter(Boolean);

/** A URL to hand to the identity provider, with its Copy button. */
function Handed({ label, url }) {
  return html`<div class="field">
    <p class="help">${label}</p>
    <div class="code-block"><pre><code>${url}</code></pre><${CopyButton} text=${url} label=${`Copy ${label.toLowerCase()}`} /></div>
  </div>`;
}

function ProviderFacts({ sp }) {
  const origin = window.location.origin;
  const org = me.value.org.id;
  const facts = {
    redirect: (sp && sp.oidc_redirect_uri) || `${origin}/api/v1/auth/sso/oidc/callback`,
    metadata: (sp && sp.saml_metadata_url) || `${origin}/api/v1/auth/sso/saml/metadata?org=${org}`,
    acs: (sp && sp.saml_acs_url) || `${origin}/api/v1/auth/sso/saml/acs`,
  };
  return html`<div>
    <p>Register Lookout with your identity provider (Okta, Entra ID, Google Workspace, Keycloak, authentik) using these.</p>
    <${Handed} label="OIDC redirect URI" url=${facts.redirect} />
    <${Handed} label="SAML metadata URL" url=${facts.metadata} />
    <${Handed} label="SAML ACS URL" url=${facts.acs} />
  </div>`;
}

/** The form's state from a saved configuration (the secret is never sent back). */
function formOf(saved) {
  const saml = saved.saml || {};
  return {
    oidcOn: !!saved.oidc,
    issuer: (saved.oidc && saved.oidc.issuer) || "",
    clientId: (saved.oidc && saved.oidc.client_id) || "",
    clientSecret: "",
    samlOn: !!saved.saml,
    metadataUrl: saml.idp_metadata_url || "",
    metadataXml: saml.idp_metadata_url ? "" : saml.idp_metadata_xml || "",
    domains: (saved.domains || []).join("\n"),
    defaultRole: saved.default_role || "member",
    required: !!saved.required,
  };
}

/** The PUT body from the form: a section turned off is null; an empty secret keeps the saved one. */
function bodyOf(form) {
  const oidc = form.oidcOn ? { issuer: form.issuer.trim(), client_id: form.clientId.trim() } : null;
  if (oidc && form.clientSecret) oidc.client_secret = form.clientSecret;
  const saml = !form.samlOn ? null : form.metadataUrl.trim()
    ? { idp_metadata_url: form.metadataUrl.trim() } : { idp_metadata_xml: form.metadataXml };
  return { oidc, saml, domains: linesOf(form.domains), default_role: form.defaultRole, required: form.required };
}

function Check({ id, label, help, checked, onChange }) {
  return html`<div class="field">
    <div class="choice">
      <input type="checkbox" id=${id} checked=${checked} aria-describedby=${help ? `${id}-help` : undefined}
        onChange=${(event) => onChange(event.currentTarget.checked)} />
      <label for=${id}>${label}</label>
    </div>
    ${help && html`<p class="help" id=${`${id}-help`}>${help}</p>`}
  </div>`;
}

function SsoForm({ saved, onSaved }) {
  const [form, setForm] = useState(() => formOf(saved));
  useEffect(() => setForm(formOf(saved)), [saved]);
  const set = (key) => (value) => setForm({ ...form, [key]: value });
  const submit = useSubmit(async () => {
    onSaved(await api("/api/v1/orgs/me/sso", { method: "PUT", body: bodyOf(form) }));
    toast("Single sign-on settings saved.");
  });
  const secretSaved = saved.oidc && saved.oidc.client_secret_set !== false;
  return html`<form onSubmit=${submit.submit} novalidate>
    <${ErrorSummary} problem=${submit.problem} title="The single sign-on settings were not saved" />
    <fieldset>
      <legend>OpenID Connect</legend>
      <${Check} id="sso-oidc-on" label="Sign in with OpenID Connect" checked=${form.oidcOn} onChange=${set("oidcOn")} />
      ${form.oidcOn && html`
        <${Field} label="Issuer URL" type="url" required value=${form.issuer} onInput=${set("issuer")} placeholder="https://login.example.com"
          help="Its /.well-known/openid-configuration is read for the endpoints and signing keys." />
        <${Field} label="Client ID" required value=${form.clientId} onInput=${set("clientId")} spellcheck="false" />
        <${Field} label="Client secret" type="password" autocomplete="off" value=${form.clientSecret} onInput=${set("clientSecret")}
          help=${secretSaved ? "Saved and never shown. Leave empty to keep it." : "Given by the provider when you registered Lookout."} />`}
    </fieldset>
    <fieldset>
      <legend>SAML 2.0</legend>
      <${Check} id="sso-saml-on" label="Sign in with SAML" checked=${form.samlOn} onChange=${set("samlOn")} />
      ${form.samlOn && html`
        <${Field} label="IdP metadata URL" type="url" value=${form.metadataUrl} onInput=${set("metadataUrl")}
          help="Fetched when you save. Or leave it empty and paste the metadata XML below." />
        <div class="field">
          <label for="sso-saml-xml">IdP metadata XML</label>
          <textarea id="sso-saml-xml" rows="6" class="mono" spellcheck="false" value=${form.metadataXml}
            onInput=${(event) => set("metadataXml")(event.currentTarget.value)}></textarea>
        </div>`}
    </fieldset>
    <fieldset>
      <legend>Who signs in</legend>
      <div class="field">
        <label for="sso-domains">E-mail domains</label>
        <p class="help" id="sso-domains-help">One per line, such as <code>example.com</code>. People who type an address at these
          domains on the sign-in page are sent to your identity provider.</p>
        <textarea id="sso-domains" rows="3" class="mono" spellcheck="false" aria-describedby="sso-domains-help"
          value=${form.domains} onInput=${(event) => set("domains")(event.currentTarget.value)}></textarea>
      </div>
      <${Select} label="Role of new members" value=${form.defaultRole} options=${ROLES} onChange=${set("defaultRole")} />
      <${Check} id="sso-required" label="Require single sign-on" checked=${form.required} onChange=${set("required")}
        help="Members can then sign in only through the identity provider. Owners keep their password as a break-glass way in; each such sign-in is in the audit log." />
    </fieldset>
    <button type="submit" class="primary" disabled=${submit.busy}>${submit.busy ? "Saving…" : "Save single sign-on"}</button>
  </form>`;
}

/** The result of a test sign-in (`?sso_test=ok&email=…` or `?sso_test=failed&code=…`). */
function TestResult({ query }) {
  const outcome = query.get("sso_test");
  if (!outcome) return null;
  if (outcome === "ok") {
    const mfa = query.get("mfa") === "1" ? "It asserted multi-factor authentication." : "It did not assert multi-factor authentication, so members' own second factor still applies.";
    return html`<p class="notice" role="status">Test sign-in worked: the provider vouched for
      <strong>${query.get("email") || "the person"}</strong>. ${mfa} Nobody was signed in and nothing was changed.</p>`;
  }
  return html`<div class="error-summary" role="alert"><h2>Test sign-in failed</h2>
    <p>${ssoErrorText(query.get("code"))} (<code>${query.get("code") || "sso_rejected"}</code>)</p></div>`;
}

function TestSignIn({ saved }) {
  const org = encodeURIComponent(me.value.org.id);
  return html`<div>
    <p>Runs a sign-in with the saved settings and shows what the provider asserted, without changing your session.</p>
    <div class="page-actions">
      ${saved.oidc && html`<a class="button" href=${`/api/v1/auth/sso/oidc/start?org=${org}&test=1`}>Test OpenID Connect sign-in</a>`}
      ${saved.saml && html`<a class="button" href=${`/api/v1/auth/sso/saml/start?org=${org}&test=1`}>Test SAML sign-in</a>`}
    </div>
  </div>`;
}

export default function SsoPage({ query }) {
  const enterprise = me.value.org.plan === "enterprise";
  const owner = me.value.role === "owner";
  const loaded = useLoad((signal) => (enterprise && owner ? api("/api/v1/orgs/me/sso", { signal }) : Promise.resolve(null)), []);
  const [saved, setSaved] = useState(null);
  useEffect(() => { if (loaded.data) setSaved(loaded.data); }, [loaded.data]);
  return html`<${SettingsFrame} current="sso">
    <${PageHeader} title="Single sign-on" />
    ${!enterprise ? html`<${EnterpriseOnly} feature="Single sign-on (OpenID Connect and SAML)" />`
      : !owner ? html`<p class="empty">Owners configure single sign-on for the organisation.</p>`
      : html`<div class="narrow">
        <${LoadProblem} problem=${loaded.problem} retry=${loaded.reload} />
        <${TestResult} query=${query} />
        <${Panel} title="Service provider details"><${ProviderFacts} sp=${saved && saved.service_provider} /><//>
        ${saved && html`<${Panel} title="Identity provider"><${SsoForm} saved=${saved} onSaved=${setSaved} /><//>`}
        ${saved && (saved.oidc || saved.saml) && html`<${Panel} title="Test sign-in"><${TestSignIn} saved=${saved} /><//>`}
      </div>`}
  <//>`;
}
