// The one door to the server: the public API with the session cookie and the CSRF header.
// Failures become a `Problem` carrying the problem+json `detail`, in words a person can act on.

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
// A 401 with one of these codes is the answer to what was typed (a wrong password or code),
// not a lost session.
const TYPED_WRONG = new Set(["invalid_credentials", "invalid_code", "invalid_invitation"]);
let sessionLost = () => {};

/** Called when a request finds no valid session (set by session.js). */
export function onSessionLost(handler) { sessionLost = handler; }

export class Problem extends Error {
  constructor(status, body, headers) {
    super(body.detail || body.title || "The request failed.");
    /** Seconds the server asked us to wait (423 locked, 429, 503), or null. */
    this.retryAfter = headers && headers.get("Retry-After") ? Number(headers.get("Retry-After")) : null;
    this.status = status;
    this.code = body.code || "";
    this.title = body.title || "";
    this.detail = this.message;
    this.body = body;
  }
}

function csrfToken() {
  const found = document.cookie.split("; ").find((part) => part.startsWith("lookout_csrf="));
  return found ? decodeURIComponent(found.slice("lookout_csrf=".length)) : "";
}

/** `/api/v1/x` plus the non-empty entries of `query`. */
export function url(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/**
 * Sends one API request and answers its JSON (null for 204). Options: `method`, `body`, `query`,
 * `signal`, and `anonymous` for the sign-in routes, where a 401 is an answer, not a lost session.
 */
export async function api(path, { method = "GET", body, query, signal, anonymous = false } = {}) {
  const headers = { Accept: "application/json, application/problem+json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (UNSAFE.has(method)) headers["X-CSRF-Token"] = csrfToken();
  let response;
  try {
    response = await fetch(url(path, query), {
      method, headers, signal, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new Problem(0, { detail: "Lookout could not be reached. Check the connection and try again." });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch { json = {}; }
  if (response.ok) return json;
  if (response.status === 401 && !anonymous && !TYPED_WRONG.has(json.code)) sessionLost();
  if (!json.detail && !json.title) {
    json = { detail: response.status >= 500
      ? "The server could not complete this request. Try again in a moment."
      : "The request was refused." };
  }
  throw new Problem(response.status, json, response.headers);
}
