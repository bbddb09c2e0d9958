// Sign in: e-mail and password, then the second factor when the account has one (an
// authenticator code or a recovery code); a locked account says how long it stays locked.
// `?next=` is the page to return to, `?org=` the organisation to sign in to, `?reason=` why
// the person is here (a session that ended, a changed password).
import { useState, useEffect } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate } from "../router.js";
import { me, signedIn } from "../session.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { useTitle } from "../components/page.js";

/** Where to go after signing in: the page that sent us here, if it is one of ours. */
function nextPage(query) {
  const next = query.get("next") || "/";
  return next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

/** Why the person is asked to sign in, in words (`?reason=`). */
const REASONS = {
  expired: "Your session has ended. Sign in again to go back to the page you were on.",
  "password-changed": "Your password is changed and every session has ended. Sign in with the new password.",
  "two-factor-off": "Two-factor authentication is off and every session has ended. Sign in again.",
  "signed-out-everywhere": "You are signed out on every device.",
};

/** The words of a 423: how long the account stays locked (the answer's `Retry-After`). */
export function lockedMessage(problem) {
  const seconds = problem.retryAfter;
  if (!seconds) return "This account is locked after too many failed sign-ins. Try again later.";
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  return `This account is locked after too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`;
}

/** A sign-in answer's problem in words a person can act on. */
export function signInProblem(problem) {
  if (problem.status === 423) problem.detail = lockedMessage(problem);
  else if (problem.code === "invalid_credentials") problem.detail = "The e-mail or password is not right.";
  else if (problem.code === "invalid_code") problem.detail = "That code is not right, or was already used. Enter the current code from your app, or an unused recovery code.";
  else if (problem.code === "sso_required") problem.detail = ssoErrorText("sso_required");
  else if (problem.code === "invalid_email") problem.detail = "Enter an e-mail address, like name@example.com.";
  return problem;
}

/** The title of the error summary above a sign-in form. */
export const problemTitle = (problem) => (problem && problem.status === 423 ? "Account locked" : "Sign-in failed");

function PasswordStep({ org, onTwoFactor, done, problem: earlier }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const form = useSubmit(async () => {
    try {
      const answer = await api("/api/v1/auth/login", { method: "POST", body: { email, password, org: org || undefined }, anonymous: true });
      if (answer.two_factor_required) onTwoFactor(answer.login_token);
      else done(answer);
    } catch (problem) {
      throw signInProblem(problem);
    }
  });
  const problem = form.problem || (form.busy ? null : earlier);
  return html`<form onSubmit=${form.submit} novalidate>
    <h1>Sign in</h1>
    <${ErrorSummary} problem=${problem} title=${problemTitle(problem)} />
    <${Field} label="E-mail" type="email" autocomplete="username" required value=${email} onInput=${setEmail} />
    <${Field} label="Password" type="password" autocomplete="current-password" required value=${password} onInput=${setPassword} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Signing in…" : "Sign in"}</button>
  </form>`;
}

/**
 * The second step: a code from the authenticator app or a recovery code. `nested` when the
 * page has its own <h1> (the invitation page).
 */
export function SecondFactorStep({ loginToken, done, restart, nested = false }) {
  const Heading = nested ? "h2" : "h1";
  const [code, setCode] = useState("");
  // The step replaces the password form: the cursor goes where the code is typed.
  useEffect(() => { const field = document.getElementById("second-factor-code"); if (field) field.focus(); }, []);
  const form = useSubmit(async () => {
    try {
      done(await api("/api/v1/auth/2fa/complete", {
        method: "POST", body: { code: code.trim(), login_token: loginToken || undefined }, anonymous: true,
      }));
    } catch (problem) {
      // An expired or used login token cannot take another code: back to the password.
      if (problem.code === "unauthorized") {
        problem.detail = "This sign-in took too long. Enter your e-mail and password again.";
        restart(problem);
      }
      throw signInProblem(problem);
    }
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <${Heading}>Two-factor authentication</${Heading}>
    <p>Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
    <${ErrorSummary} problem=${form.problem} title=${form.problem && form.problem.status === 423 ? "Account locked" : "Verification failed"} />
    <${Field} id="second-factor-code" label="Authentication or recovery code" autocomplete="one-time-code"
      spellcheck="false" required value=${code} onInput=${setCode} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Verifying…" : "Verify"}</button>
    <p><button type="button" class="link" onClick=${() => restart(null)}>Start again</button></p>
  </form>`;
}

/** Why a single sign-on came back refused (`?sso_error=`), in words. */
const SSO_ERRORS = {
  sso_not_configured: "Single sign-on is not set up for that organisation or e-mail domain. Sign in with your password.",
  plan_required: "Single sign-on needs the organisation's Enterprise plan.",
  sso_email_unverified: "Your identity provider did not vouch for your e-mail address, so you were not signed in.",
  sso_account_exists: "An account with this e-mail already exists. Sign in with its password, then link single sign-on from your profile.",
  sso_linked_elsewhere: "This identity is already linked to another Lookout account.",
  sso_account_disabled: "This account was deactivated in the organisation. Ask an owner to restore it.",
  sso_state_invalid: "This sign-in took too long or was started in another browser. Start again.",
  sso_replayed: "That answer from your identity provider was already used. Start again.",
  sso_provider_unavailable: "Your identity provider could not be reached. Try again in a moment.",
  sso_required: "This organisation signs in through its identity provider: choose \"Sign in with SSO\" below.",
};
export const ssoErrorText = (code) => SSO_ERRORS[code] || "Single sign-on did not complete: the identity provider's answer was refused. Try again, or ask an owner to check the settings.";

/** "Sign in with SSO" (a link, so the password form's "Sign in" stays the page's one button of that name): the work e-mail's domain (or `?org=`) finds the organisation's identity provider. */
function SsoStep({ org }) {
  const [open, setOpen] = useState(false);
  const [email, setEmail] = useState("");
  const form = useSubmit(async () => {
    const query = org ? { org } : { email: email.trim() };
    let found;
    try {
      found = await api("/api/v1/auth/sso/discover", { query, anonymous: true });
    } catch (problem) {
      if (problem.status === 404 || problem.status === 403) problem.detail = ssoErrorText(problem.code || "sso_not_configured");
      throw problem;
    }
    const protocol = (found.protocols || []).includes("oidc") ? "oidc" : "saml";
    window.location.assign(`/api/v1/auth/sso/${protocol}/start?org=${encodeURIComponent(found.org_id)}`);
  });
  // With `?org=` the organisation is known: the link goes straight to its provider.
  if (!open || org) {
    return html`<div class="sso-choice">
      <${ErrorSummary} problem=${form.problem} title="Single sign-on unavailable" />
      <p><a href=${org ? `/login?org=${encodeURIComponent(org)}` : "/login"} aria-disabled=${form.busy ? "true" : undefined}
        onClick=${(event) => { event.preventDefault(); if (!form.busy) { if (org) form.submit(); else setOpen(true); } }}>Sign in with SSO</a></p>
    </div>`;
  }
  return html`<form onSubmit=${form.submit} novalidate class="sso-choice">
    <h2>Single sign-on</h2>
    <${ErrorSummary} problem=${form.problem} title="Single sign-on unavailable" />
    <${Field} label="Work e-mail" type="email" autocomplete="username" required value=${email} onInput=${setEmail}
      help="You are sent to your organisation's identity provider." />
    <button type="submit" disabled=${form.busy}>${form.busy ? "Finding your provider…" : "Continue with SSO"}</button>
  </form>`;
}

export default function LoginPage({ query }) {
  useTitle("Sign in");
  // After single sign-on, `?two_factor=1`: the login token is in the `lookout_login` cookie.
  const [loginToken, setLoginToken] = useState(query.get("two_factor") ? "" : null);
  const [restartProblem, setRestartProblem] = useState(null);
  const target = nextPage(query);
  useEffect(() => { if (me.value) navigate(target, { replace: true }); }, [me.value]);
  const done = (answer) => { signedIn(answer); navigate(target, { replace: true }); };
  const restart = (problem) => { setRestartProblem(problem); setLoginToken(null); };
  if (loginToken !== null) {
    return html`<${SecondFactorStep} loginToken=${loginToken} done=${done} restart=${restart} />`;
  }
  const reason = REASONS[query.get("reason")];
  const ssoError = query.get("sso_error");
  return html`<div>
    ${reason && html`<p class="notice" role="status">${reason}</p>`}
    ${ssoError && html`<div class="error-summary" role="alert"><h2>Single sign-on failed</h2><p>${ssoErrorText(ssoError)}</p></div>`}
    ${!reason && target !== "/" && html`<p class="notice" role="status">Sign in to continue to the page you opened.</p>`}
    <${PasswordStep} org=${query.get("org")} onTwoFactor=${(token) => { setRestartProblem(null); setLoginToken(token); }}
      done=${done} problem=${restartProblem} />
    <${SsoStep} org=${query.get("org")} />
  </div>`;
}
