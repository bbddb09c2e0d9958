// Enrolling a second factor on the profile page: the server's QR code and the secret to type by
// hand, a first code to confirm, then the recovery codes, shown once with Copy and Download.
import { useState, useEffect, useMemo } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { me } from "../session.js";
import { Field, ErrorSummary, useSubmit } from "../components/form.js";
import { CopyButton } from "../components/copy.js";
import { useLoad } from "../components/load.js";
import { LoadProblem } from "../components/page.js";

/** The secret in groups of four, as authenticator apps show it. */
const grouped = (secret) => (secret.match(/.{1,4}/g) || []).join(" ");

/** The server's QR code (SVG) as an image: no markup of the server's is put into the page. */
const qrImage = (svg) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;

function RecoveryCodes({ codes, onFinished }) {
  const text = useMemo(() => [
    `Lookout recovery codes for ${me.value.user.email}`,
    "Each code works once, in place of a code from your authenticator app.",
    "",
    ...codes,
    "",
  ].join("\n"), [codes]);
  const link = useMemo(() => URL.createObjectURL(new Blob([text], { type: "text/plain" })), [text]);
  useEffect(() => () => URL.revokeObjectURL(link), [link]);
  return html`<div aria-labelledby="recovery-heading" role="region">
    <h3 id="recovery-heading">Save your recovery codes</h3>
    <p class="warning">These codes are shown only now. Keep them somewhere safe: each one signs you in once if you lose your authenticator app.</p>
    <ol class="recovery-codes mono" aria-label="Recovery codes">${codes.map((code) => html`<li>${code}</li>`)}</ol>
    <div class="page-actions">
      <${CopyButton} text=${codes.join("\n")} label="Copy codes" />
      <a class="button" href=${link} download="lookout-recovery-codes.txt">Download codes (.txt)</a>
      <button type="button" class="primary" onClick=${onFinished}>I have saved these codes</button>
    </div>
  </div>`;
}

/** Starts an enrolment when shown; `onEnabled` once the code is confirmed, `onFinished` when done or cancelled. */
export function TwoFactorEnrolment({ onEnabled, onFinished }) {
  const enrolment = useLoad((signal) => api("/api/v1/auth/2fa/setup", { method: "POST", signal }), []);
  const [code, setCode] = useState("");
  const [codes, setCodes] = useState(null);
  const form = useSubmit(async () => {
    let answer;
    try {
      answer = await api("/api/v1/auth/2fa/enable", { method: "POST", body: { code: code.trim() } });
    } catch (problem) {
      if (problem.code === "invalid_code") problem.detail = "That code is not right. Enter the code your app shows now (it changes every 30 seconds).";
      throw problem;
    }
    setCodes(answer.recovery_codes);
    onEnabled();
  });
  if (codes) return html`<${RecoveryCodes} codes=${codes} onFinished=${onFinished} />`;
  if (enrolment.problem) {
    return html`<div><${LoadProblem} problem=${enrolment.problem} retry=${enrolment.reload} />
      <button type="button" onClick=${onFinished}>Back</button></div>`;
  }
  if (!enrolment.data) return html`<p class="meta" role="status">Preparing a new secret…</p>`;
  const { secret, qr_svg: svg } = enrolment.data;
  return html`<div class="enrolment">
    <ol class="steps">
      <li>
        <h3>Scan this QR code with your authenticator app</h3>
        <img class="qr" src=${qrImage(svg)} width="200" height="200" alt="QR code of your new two-factor secret, for an authenticator app" />
      </li>
      <li>
        <h3>Or type the secret key into the app</h3>
        <div class="secret-row">
          <${Field} label="Secret key" readonly class="mono secret-key" value=${grouped(secret)}
            onFocus=${(event) => event.currentTarget.select()} />
          <${CopyButton} text=${secret} label="Copy secret key" />
        </div>
      </li>
      <li>
        <form onSubmit=${form.submit} novalidate>
          <h3>Enter the code the app shows</h3>
          <${ErrorSummary} problem=${form.problem} title="Two-factor authentication is not on yet" />
          <${Field} label="Code from your authenticator app" autocomplete="one-time-code" inputmode="numeric"
            spellcheck="false" required value=${code} onInput=${setCode} />
          <div class="page-actions">
            <button type="submit" class="primary" disabled=${form.busy}>${form.busy ? "Checking…" : "Turn on two-factor authentication"}</button>
            <button type="button" onClick=${onFinished}>Cancel</button>
          </div>
        </form>
      </li>
    </ol>
  </div>`;
}
