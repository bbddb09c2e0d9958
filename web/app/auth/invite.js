// Invitation acceptance (`/invite?token=`): a new person chooses a password (the account was
// made by the invitation); someone with an account signs in as themselves (password, then
// their second factor) and joins. Either way they end signed in, on the overview of the
// organisation they joined. `?account=existing` keeps the second choice in the address.
import { useState } from "preact/hooks";
import { signal } from "@preact/signals";
import { html } from "../html.js";
import { api } from "../api.js";
import { navigate, setQuery } from "../router.js";
import { me, signedIn } from "../session.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { useTitle } from "../components/page.js";
import { SecondFactorStep, signInProblem, problemTitle } from "./login.js";

const ACCEPT = "/api/v1/auth/invitations/accept";

/** The token the server called dead: the page then says so instead of showing its forms. */
const deadToken = signal("");

/** An acceptance's problem in words (a dead link turns the page into its explanation). */
function inviteProblem(problem, token) {
  if (problem.code === "invalid_invitation") {
    deadToken.value = token;
  } else if (problem.code === "invalid_credentials") {
    problem.detail = "This invitation is for another e-mail address. Sign in with the address the invitation was sent to.";
  }
  return problem;
}

/** Signs in to `org` and opens its overview; when that needs a second code, sign-in asks for it. */
async function signInTo(email, password, org) {
  const answer = await api("/api/v1/auth/login", { method: "POST", body: { email, password, org: org.id }, anonymous: true });
  if (answer.two_factor_required) {
    navigate(`/login?org=${encodeURIComponent(org.id)}`);
    return;
  }
  signedIn(answer);
  navigate("/");
}

/**
 * Joins with the session of the account signed in to `orgId`, makes the organisation joined the
 * session's one, and loads the app afresh there (the session changed under every page).
 */
async function joinSignedIn(token, orgId) {
  const joined = await api(ACCEPT, { method: "POST", body: { token } });
  if (orgId !== joined.org.id) {
    // The person is a member now: should the switch fail, the top bar's switcher still can.
    await api("/api/v1/auth/switch-org", { method: "POST", body: { org_id: joined.org.id } }).catch(() => null);
  }
  window.location.assign("/");
}

function NewAccount({ token }) {
  const [password, setPassword] = useState("");
  const form = useSubmit(async () => {
    let joined;
    try {
      joined = await api(ACCEPT, { method: "POST", body: { token, password }, anonymous: true });
    } catch (problem) {
      // The invitation is for an account that exists: it has to prove who it is.
      if (problem.code === "invalid_credentials" || problem.code === "invalid_code") {
        problem.detail = "This invitation is for an account that already exists. Choose “I already have a Lookout account” and sign in with it.";
        throw problem;
      }
      throw inviteProblem(problem, token);
    }
    await signInTo(joined.user.email, password, joined.org).catch(() => navigate(`/login?org=${encodeURIComponent(joined.org.id)}`));
  });
  return html`<form onSubmit=${form.submit} novalidate aria-labelledby="new-account-heading">
    <h2 id="new-account-heading">Choose a password</h2>
    <p>Your account was created with the invitation. Choose its password to join.</p>
    <${ErrorSummary} problem=${form.problem} title="Could not join" />
    <${Field} label="New password" type="password" autocomplete="new-password" required minlength="8"
      help="At least 8 characters." value=${password} onInput=${setPassword} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Joining…" : "Set password and join"}</button>
  </form>`;
}

/**
 * Signs in as the invited account (password, then the second factor), then joins with that
 * session. A failure after signing in is handed to `failedSignedIn` with the session's answer.
 */
function ExistingAccount({ token, failedSignedIn }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [loginToken, setLoginToken] = useState(null);
  const [problem, setProblem] = useState(null);
  const join = (answer) => joinSignedIn(token, answer.org.id).catch((failure) => {
    signedIn(answer);
    failedSignedIn(inviteProblem(failure, token));
  });
  const form = useSubmit(async () => {
    setProblem(null);
    let answer;
    try {
      answer = await api("/api/v1/auth/login", { method: "POST", body: { email, password }, anonymous: true });
    } catch (failure) {
      throw signInProblem(failure);
    }
    if (answer.two_factor_required) setLoginToken(answer.login_token);
    else await join(answer);
  });
  if (loginToken) {
    const restart = (failure) => { setLoginToken(null); setProblem(failure); };
    return html`<${SecondFactorStep} nested loginToken=${loginToken} done=${join} restart=${restart} />`;
  }
  const shown = form.problem || problem;
  return html`<form onSubmit=${form.submit} novalidate aria-labelledby="existing-account-heading">
    <h2 id="existing-account-heading">Sign in to join</h2>
    <p>Sign in with the account the invitation was sent to. Your password stays as it is. New to Lookout? Choose “I am new to Lookout” above.</p>
    <${ErrorSummary} problem=${shown} title=${problemTitle(shown)} />
    <${Field} label="E-mail" type="email" autocomplete="username" required value=${email} onInput=${setEmail} />
    <${Field} label="Password" type="password" autocomplete="current-password" required value=${password} onInput=${setPassword} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Signing in…" : "Sign in and join"}</button>
  </form>`;
}

/** Someone already signed in joins with that account, or signs out to use another. */
function SignedInJoin({ token, problem }) {
  const form = useSubmit(async () => {
    try {
      await joinSignedIn(token, me.value.org.id);
    } catch (problem) {
      // A link for a new account asks for the password that account is to get.
      if (problem.code === "invalid_payload") {
        problem.detail = "This invitation is for a new account. Sign out, then choose its password here.";
      }
      throw inviteProblem(problem, token);
    }
  });
  const leave = async () => {
    await api("/api/v1/auth/logout", { method: "POST" }).catch(() => null);
    // Signed out, the page shows its forms: this page needs no session.
    me.value = null;
  };
  return html`<form onSubmit=${form.submit} novalidate>
    <p>You are signed in as <strong>${me.value.user.email}</strong>.</p>
    <${ErrorSummary} problem=${form.problem || problem} title="Could not join" />
    <p><button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Joining…" : `Join as ${me.value.user.email}`}</button></p>
    <p><button type="button" class="link" onClick=${leave}>Sign out to use another account</button></p>
  </form>`;
}

const CHOICES = [["new", "I am new to Lookout"], ["existing", "I already have a Lookout account"]];

export default function InvitePage({ query }) {
  useTitle("Accept an invitation");
  const token = (query.get("token") || "").trim();
  const choice = query.get("account") === "existing" ? "existing" : "new";
  const [carried, setCarried] = useState(null);
  if (!token) {
    return html`<section>
      <h1>Accept an invitation</h1>
      <div class="error-summary" role="alert"><h2>This link is incomplete</h2>
        <p>An invitation link ends with <code>?token=</code> and a long code. Open the link from the invitation again, whole, or ask an admin for a new one.</p></div>
    </section>`;
  }
  if (deadToken.value === token) {
    return html`<section>
      <h1>Accept an invitation</h1>
      <div class="error-summary" role="alert"><h2>This invitation can no longer be used</h2>
        <p>The link was already used, has expired (links last 7 days) or was withdrawn. Ask an admin of the organisation for a new one.</p></div>
      <p><a href=${me.value ? "/" : "/login"}>${me.value ? "Go to the overview" : "Sign in"}</a></p>
    </section>`;
  }
  if (me.value) {
    return html`<section><h1>Accept an invitation</h1><${SignedInJoin} token=${token} problem=${carried} /></section>`;
  }
  return html`<section>
    <h1>Accept an invitation</h1>
    <p>You have been invited to an organisation on Lookout.</p>
    <fieldset class="choices">
      <legend>Do you already have a Lookout account?</legend>
      ${CHOICES.map(([value, text]) => html`<label class="choice">
        <input type="radio" name="account" value=${value} checked=${choice === value}
          onChange=${() => setQuery({ account: value === "existing" ? "existing" : null })} />
        ${text}</label>`)}
    </fieldset>
    ${choice === "existing" ? html`<${ExistingAccount} token=${token} failedSignedIn=${setCarried} key="existing" />` : html`<${NewAccount} token=${token} key="new" />`}
  </section>`;
}
