// The app's frame for signed-in pages: a left navigation, a top bar with the organisation
// switcher, the global search and the person's menu, and the page in <main>.
import { useState, useEffect } from "preact/hooks";
import { signal } from "@preact/signals";
import { html } from "../html.js";
import { current, navigate } from "../router.js";
import { me, orgs, signOut, switchOrg } from "../session.js";
import { ShortcutHelp, helpOpen } from "./keyboard.js";
import { Toasts } from "./toast.js";
import { api } from "../api.js";
import { useInterval } from "./load.js";

/** Counts shown beside navigation items (`{errors: 3}`), set by whoever knows them. */
export const badges = signal({});

const NAV = [
  { section: "overview", href: "/", label: "Overview" },
  { section: "errors", href: "/errors", label: "Errors" },
  { section: "sessions", href: "/sessions", label: "Sessions" },
  { section: "performance", href: "/performance", label: "Performance" },
  { section: "alerts", href: "/alerts", label: "Alerts", badge: "firing" },
  { section: "incidents", href: "/incidents", label: "Incidents", badge: "open" },
  { section: "deployments", href: "/deployments", label: "Deployments" },
  { section: "experiments", href: "/experiments", label: "Experiments" },
  { section: "agents", href: "/agents", label: "Agents" },
];

function Navigation({ section }) {
  return html`<nav class="sidebar" aria-label="Main">
    <a class="brand" href="/"><img src="/assets/icon.svg" alt="" width="20" height="20" /> Lookout</a>
    <ul>
      ${NAV.map((item) => html`<li>
        <a href=${item.href} aria-current=${item.section === section ? "page" : undefined}>
          ${item.label}
          ${badges.value[item.section] ? html`<span class="badge" aria-label=${`${badges.value[item.section]} ${item.badge || "new"}`}>${badges.value[item.section]}</span>` : null}
        </a></li>`)}
    </ul>
    <ul class="nav-foot">
      <li><a href="/settings" aria-current=${section === "settings" ? "page" : undefined}>Settings</a></li>
      <li><a href="/profile" aria-current=${section === "profile" ? "page" : undefined}>Profile</a></li>
    </ul>
  </nav>`;
}

/**
 * The organisation of the session; for people in several, a menu of them: choosing one
 * exchanges the session for one there (`POST /api/v1/auth/switch-org`) and opens its overview.
 * A menu rather than a <select>, so that moving through the choices switches nothing.
 */
function OrgSwitcher() {
  const mine = me.value;
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState(null);
  if (orgs.value.length < 2) return html`<span class="org-name">${mine.org.name}</span>`;
  const choose = async (org) => {
    setOpen(false);
    if (org.id === mine.org.id) return;
    setBusy(true);
    setProblem(null);
    try {
      await switchOrg(org.id);
    } catch (failure) {
      setBusy(false);
      setProblem(failure);
    }
  };
  return html`<div class="org-switch" onKeyDown=${(event) => event.key === "Escape" && setOpen(false)}>
    <button type="button" class="quiet org-name" aria-haspopup="true" aria-expanded=${open ? "true" : "false"}
      disabled=${busy} onClick=${() => setOpen(!open)}>
      <span class="visually-hidden">Organisation: </span>${mine.org.name} <span aria-hidden="true">▾</span>
    </button>
    ${open && html`<ul class="menu">
      ${orgs.value.map((org) => html`<li><button type="button" class="quiet" onClick=${() => choose(org)}
        aria-current=${org.id === mine.org.id ? "true" : undefined}>${org.name} <span class="meta">${`(${org.role})`}</span></button></li>`)}
    </ul>`}
    ${busy && html`<span class="meta" role="status">Switching…</span>`}
    ${problem && html`<span class="inline-error" role="alert">${problem.detail}</span>`}
  </div>`;
}

function GlobalSearch() {
  const [text, setText] = useState(current.value.path === "/errors" ? current.value.query.get("q") || "" : "");
  const go = (event) => {
    event.preventDefault();
    navigate(text ? `/errors?q=${encodeURIComponent(text)}` : "/errors");
  };
  return html`<form role="search" class="global-search" onSubmit=${go}>
    <label for="global-search" class="visually-hidden">Search errors</label>
    <input id="global-search" type="search" placeholder="Search errors  ( / )" value=${text}
      onInput=${(event) => setText(event.currentTarget.value)} />
  </form>`;
}

function UserMenu() {
  const [open, setOpen] = useState(false);
  const close = () => setOpen(false);
  return html`<div class="menu-wrap" onKeyDown=${(event) => event.key === "Escape" && close()}>
    <button type="button" class="quiet" aria-haspopup="true" aria-expanded=${open ? "true" : "false"}
      onClick=${() => setOpen(!open)}>${me.value.user.email}</button>
    ${open && html`<ul class="menu" onClick=${close}>
      <li><a href="/profile">Profile and two-factor</a></li>
      <li><button type="button" class="quiet" onClick=${() => { helpOpen.value = true; }}>Keyboard shortcuts</button></li>
      <li><button type="button" class="quiet" onClick=${() => signOut()}>Sign out</button></li>
      <li><button type="button" class="quiet" onClick=${() => signOut({ everywhere: true })}>Sign out everywhere</button></li>
    </ul>`}
  </div>`;
}

const setBadge = (section, count) => { badges.value = { ...badges.value, [section]: count }; };

/**
 * Keeps the navigation's badges current: unresolved error groups first seen in the last 24
 * hours, firing alerts and open incidents (counted from one page of at most 500).
 */
function useBadges() {
  const refresh = () => {
    const since = new Date(Math.floor((Date.now() - 864e5) / 60000) * 60000).toISOString();
    api("/api/v1/error-groups", { query: { status: "unresolved", new_since: since, limit: 1 } }).then(
      (answer) => setBadge("errors", answer.total || 0), () => {});
    api("/api/v1/alerts", { query: { state: "firing", limit: 500 } }).then(
      (answer) => setBadge("alerts", answer.items.length), () => {});
    api("/api/v1/incidents", { query: { status: "open", limit: 500 } }).then(
      (answer) => setBadge("incidents", answer.items.length), () => {});
  };
  useEffect(refresh, []);
  useInterval(refresh, 60000);
}

export function Shell({ section, children }) {
  useBadges();
  return html`<div class="shell">
    <a class="skip-link" href="#main">Skip to content</a>
    <${Navigation} section=${section} />
    <div class="workspace">
      <header class="topbar">
        <${OrgSwitcher} />
        <${GlobalSearch} />
        <${UserMenu} />
      </header>
      <main id="main" tabindex="-1">${children}</main>
    </div>
    <${ShortcutHelp} />
    <${Toasts} />
  </div>`;
}

/** The frame of pages seen before signing in: the brand and one card. */
export function Plain({ children }) {
  return html`<div class="plain">
    <main id="main" class="card">
      <p class="brand"><img src="/assets/icon.svg" alt="" width="20" height="20" /> Lookout</p>
      ${children}
    </main>
    <${Toasts} />
  </div>`;
}
