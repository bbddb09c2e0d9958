// The signed-in person's own page (`/profile`): who they are here (e-mail, organisation, role),
// their password, their second factor (enrol with a QR code or the secret, recovery codes shown
// once; turn it off with a code), and signing out here or everywhere.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me, signOut, signedOut } from "../session.js";
import { Field, ErrorSummary, ActionButton, useSubmit } from "../components/form.js";
import { PageHeader, Facts, Panel } from "../components/page.js";
import { ssoErrorText } from "./login.js";
import { toast } from "../components/toast.js";
import { TwoFactorEnrolment } from "./two_factor.js";

const ROLE = { owner: "Owner", admin: "Admin", member: "Member", viewer: "Viewer" };

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const form = useSubmit(async () => {
    try {
      await api("/api/v1/auth/password", { method: "POST", body: { current_password: current, new_password: next } });
    } catch (problem) {
      if (problem.code === "invalid_credentials") problem.detail = "The current password is not right.";
      throw problem;
    }
    // The server ended every session of the account, this one too.
    signedOut("password-changed");
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <p>Changing the password signs you out everywhere, here too; then sign in with the new one.</p>
    <${ErrorSummary} problem=${form.problem} title="The password was not changed" />
    <${Field} label="Current password" type="password" autocomplete="current-password" required
      value=${current} onInput=${setCurrent} />
    <${Field} label="New password" type="password" autocomplete="new-password" required minlength="8"
      help="At least 8 characters." value=${next} onInput=${setNext} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Changing…" : "Change password"}</button>
  </form>`;
}

function DisableTwoFactor() {
  const [code, setCode] = useState("");
  const form = useSubmit(async () => {
    try {
      await api("/api/v1/auth/2fa/disable", { method: "POST", body: { code: code.trim() } });
    } catch (problem) {
      if (problem.code === "invalid_code") problem.detail = "That code is not right, or was already used. Enter the current code from your app, or an unused recovery code.";
      throw problem;
    }
    signedOut("two-factor-off");
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <h3>Turn off two-factor authentication</h3>
    <p>Confirm with a code from your authenticator app or a recovery code. This signs you out everywhere.</p>
    <${ErrorSummary} problem=${form.problem} title="Two-factor authentication is still on" />
    <${Field} label="Authentication or recovery code" autocomplete="one-time-code" spellcheck="false" required
      value=${code} onInput=${setCode} />
    <button type="submit" class="danger" disabled=${form.busy}>${form.busy ? "Turning off…" : "Turn off two-factor authentication"}</button>
  </form>`;
}

function TwoFactor() {
  const person = me.value;
  const enabled = person.user.two_factor_enabled;
  const [enrolling, setEnrolling] = useState(false);
  const enabledNow = () => {
    me.value = { ...me.value, user: { ...me.value.user, two_factor_enabled: true } };
    toast("Two-factor authentication is on.");
  };
  if (enrolling) {
    return html`<${TwoFactorEnrolment} onEnabled=${enabledNow} onFinished=${() => setEnrolling(false)} />`;
  }
  if (enabled) {
    return html`<div>
      <p><span class="pill pill-ok">On</span> Signing in asks for a code from your authenticator app (or a recovery code).</p>
      <${DisableTwoFactor} />
    </div>`;
  }
  return html`<div>
    <p><span class="pill pill-muted">Off</span> Add a code from an authenticator app (such as a password manager) to your password when you sign in.</p>
    <button type="button" class="primary" onClick=${() => setEnrolling(true)}>Set up two-factor authentication</button>
  </div>`;
}

function Sessions() {
  return html`<div>
    <p>Signing out everywhere ends every session of your account: on every device and browser, this one included.</p>
    <div class="page-actions">
      <${ActionButton} action=${() => signOut()} busyText="Signing out…">Sign out<//>
      <${ActionButton} kind="danger" action=${() => signOut({ everywhere: true })} busyText="Signing out…">Sign out everywhere<//>
    </div>
  </div>`;
}

/**
 * On the Enterprise plan: link this account to the organisation's identity provider, so that
 * "Use single sign-on" signs in to it (an account with a password is never taken over otherwise).
 */
function SingleSignOn({ org }) {
  const start = `/api/v1/auth/sso/oidc/start?org=${encodeURIComponent(org.id)}&link=1`;
  return html`<div>
    <p>Link your account to ${org.name}'s identity provider (OpenID Connect): from then on, single sign-on
      signs you in here. Your password keeps working unless the organisation requires single sign-on.</p>
    <a class="button" href=${start}>Link single sign-on</a>
  </div>`;
}

export default function ProfilePage({ query }) {
  const person = me.value;
  const mustEnrol = person.org.two_factor_required && !person.user.two_factor_enabled;
  return html`<div class="narrow">
    <${PageHeader} title="Profile" />
    <${Facts} facts=${[
      ["E-mail", person.user.email],
      ["Organisation", person.org.name],
      ["Role", ROLE[person.role] || person.role],
      ["Two-factor", person.user.two_factor_enabled ? "On" : "Off"],
    ]} />
    ${mustEnrol && html`<p class="notice" role="status">${person.org.name} requires two-factor authentication. Set it up below to use Lookout.</p>`}
    <${Panel} title="Two-factor authentication"><${TwoFactor} /><//>
    <${Panel} title="Password"><${ChangePassword} /><//>
    ${person.org.plan === "enterprise" && html`<${Panel} title="Single sign-on">
      ${query && query.get("sso") === "linked" && html`<p class="notice" role="status">Single sign-on is linked to your account.</p>`}
      ${query && query.get("sso_error") && html`<div class="error-summary" role="alert"><h2>Single sign-on was not linked</h2>
        <p>${ssoErrorText(query.get("sso_error"))}</p></div>`}
      <${SingleSignOn} org=${person.org} /><//>`}
    <${Panel} title="Sign out"><${Sessions} /><//>
  </div>`;
}
