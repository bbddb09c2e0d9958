// First-run setup: the link the server printed creates the first organisation and its owner,
// then sends the person to sign in.
import { useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { useLoad } from "../components/load.js";
import { useTitle } from "../components/page.js";

export default function SetupPage({ query }) {
  useTitle("Set up Lookout");
  const status = useLoad((signal) => api("/api/v1/setup", { signal, anonymous: true }), []);
  const [orgName, setOrgName] = useState("default");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [created, setCreated] = useState(null);
  const form = useSubmit(async () => {
    setCreated(await api("/api/v1/setup", {
      method: "POST", anonymous: true,
      body: { token: query.get("token") || "", org_name: orgName, email, password },
    }));
  });

  if (created) {
    return html`<section>
      <h1>Lookout is ready</h1>
      <p role="status">Created ${created.user.email}, owner of ${created.org.name}. You can sign in now.</p>
      <p><a class="button primary" href="/login">Sign in</a></p>
    </section>`;
  }
  if (status.data && status.data.required === false) {
    return html`<section>
      <h1>Setup is done</h1>
      <p>This Lookout already has its first owner.</p>
      <p><a class="button primary" href="/login">Sign in</a></p>
    </section>`;
  }
  return html`<form onSubmit=${form.submit} novalidate>
    <h1>Set up Lookout</h1>
    <p>Create the first organisation and its owner. This link works once.</p>
    <${ErrorSummary} problem=${form.problem} title="Setup failed" />
    <${Field} label="Organisation" required maxlength="100" value=${orgName} onInput=${setOrgName} />
    <${Field} label="E-mail" type="email" required autocomplete="username" value=${email} onInput=${setEmail} />
    <${Field} label="Password" type="password" required minlength="8" autocomplete="new-password"
      help="At least 8 characters." value=${password} onInput=${setPassword} />
    <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Creating…" : "Create owner"}</button>
  </form>`;
}
