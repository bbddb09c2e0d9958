// Sign in: e-mail and password, then the second factor when the account has one (an
// authenticator code or a recovery code); a locked account says how long it stays locked.
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

function lockedMessage(problem) {
  const minutes = problem.retryAfter ? Math.max(1, Math.ceil(problem.retryAfter / 60)) : null;
  return minutes
    ? `This account is locked after too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`
    : "This account is locked after too many failed sign-ins. Try again later.";
}

function PasswordStep({ onTwoFactor, done }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const form = useSubmit(async () => {
    try {
      const answer = await api("/api/v1/auth/login", { method: "POST", body: { email, password }, anonymous: true });
      if (answer.two_factor_required) onTwoFactor(answer.login_token);
      else done(answer);
    } catch (problem) {
      if (problem.status === 423) problem.detail = lockedMessage(problem);
      else if (problem.code === "invalid_credentials") problem.detail = "The e-mail or password is not right.";
      throw problem;
    }
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <h1>Sign in</h1>
    <${ErrorSummary} problem=${form.problem} title=${form.problem && form.problem.status === 423 ? "Account locked" : "Sign-in failed"} />
    <${Field} label="E-mail" type="email" autocomplete="username" required value=${email} onInput=${setEmail} />
    <${Field} label="Password" type="password" autocomplete="current-password" required value=${password} onInput=${setPassword} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Signing in…" : "Sign in"}</button>
  </form>`;
}

function SecondFactorStep({ loginToken, done, restart }) {
  const [code, setCode] = useState("");
  const form = useSubmit(async () => {
    try {
      done(await api("/api/v1/auth/2fa/complete", {
        method: "POST", body: { code: code.trim(), login_token: loginToken }, anonymous: true,
      }));
    } catch (problem) {
      if (problem.status === 423) problem.detail = lockedMessage(problem);
      else if (problem.status === 401 && problem.code !== "invalid_credentials") restart(problem);
      throw problem;
    }
  });
  return html`<form onSubmit=${form.submit} novalidate>
    <h1>Two-factor authentication</h1>
    <p>Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
    <${ErrorSummary} problem=${form.problem} title="Verification failed" />
    <${Field} label="Authentication or recovery code" autocomplete="one-time-code" inputmode="text"
      autofocus required value=${code} onInput=${setCode} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Verifying…" : "Verify"}</button>
    <p><button type="button" class="link" onClick=${() => restart(null)}>Start again</button></p>
  </form>`;
}

export default function LoginPage({ query }) {
  useTitle("Sign in");
  const [loginToken, setLoginToken] = useState(null);
  const target = nextPage(query);
  useEffect(() => { if (me.value) navigate(target, { replace: true }); }, [me.value]);
  const done = (answer) => { signedIn(answer); navigate(target, { replace: true }); };
  if (loginToken) {
    return html`<${SecondFactorStep} loginToken=${loginToken} done=${done} restart=${() => setLoginToken(null)} />`;
  }
  return html`<div>
    ${target !== "/" && html`<p class="notice" role="status">Sign in to continue to the page you opened.</p>`}
    <${PasswordStep} onTwoFactor=${setLoginToken} done=${done} />
  </div>`;
}
