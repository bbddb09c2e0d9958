// Who is signed in: the person, their organisation and role, and the organisations they can
// switch to. `me` is undefined while unknown, null when signed out.
import { signal, computed } from "@preact/signals";
import { api, onSessionLost } from "./api.js";
import { navigate, here, current } from "./router.js";

export const me = signal(undefined);
export const orgs = signal([]);

const RANK = { viewer: 0, member: 1, admin: 2, owner: 3 };
/** Whether the person may take actions that change things (members and up). */
export const canAct = computed(() => !!me.value && RANK[me.value.role] >= RANK.member);
export const isAdmin = computed(() => !!me.value && RANK[me.value.role] >= RANK.admin);

/** The sign-in page, coming back to `next` afterwards; `reason` says why (see auth/login.js). */
export function signInPath(next = here(), reason = "") {
  const query = new URLSearchParams();
  if (next && next !== "/" && !next.startsWith("/login")) query.set("next", next);
  if (reason) query.set("reason", reason);
  const search = query.toString();
  return search ? `/login?${search}` : "/login";
}

// A request that finds its session gone brings the person to sign in, then back here.
onSessionLost(() => {
  if (current.value.path === "/login") return;
  me.value = null;
  navigate(signInPath(here(), "expired"), { replace: true });
});

export async function loadMe() {
  try {
    me.value = await api("/api/v1/auth/me", { anonymous: true });
    loadOrgs();
  } catch (problem) {
    if (problem.status === 401) me.value = null;
    else throw problem;
  }
}

async function loadOrgs() {
  try { orgs.value = (await api("/api/v1/auth/orgs")).items || []; } catch { orgs.value = []; }
}

/** Takes the answer of a sign-in (or an org switch) as the current session. */
export function signedIn(answer) {
  me.value = { user: answer.user, org: answer.org, role: answer.role };
  loadOrgs();
}

export async function signOut({ everywhere = false } = {}) {
  await api(everywhere ? "/api/v1/auth/logout-everywhere" : "/api/v1/auth/logout", { method: "POST" });
  signedOut(everywhere ? "signed-out-everywhere" : "");
}

/** After the server ended the session (sign-out, password change): sign-in, saying why. */
export function signedOut(reason = "") {
  me.value = null;
  orgs.value = [];
  navigate(signInPath("/", reason));
}

/**
 * Signs in to another of the person's organisations and opens its overview afresh, so no page
 * keeps data of the organisation left.
 */
export async function switchOrg(orgId) {
  await api("/api/v1/auth/switch-org", { method: "POST", body: { org_id: orgId } });
  window.location.assign("/");
}
