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
];

function Navigation({ section }) {
  return html`<nav class="sidebar" aria-label="Main">
    <a class="brand" href="/"><img src="/assets/icon.svg" alt="" width="20" height="20" /> Lookout</a>
    <ul>
      ${NAV.map((item) => html`<li>
        <a href=${item.href} aria-current=${item.section === section ? "page" : undefined}>
          ${item.label}
          ${badges.value[item.section] ? html`<span class="badge" aria-label=${`${badges.value[item.section]} new`}>${badges.value[item.section]}</span>` : null}
        </a></li>`)}
    </ul>
    <ul class="nav-foot"><li><a href="/profile" aria-current=${section === "profile" ? "page" : undefined}>Profile</a></li></ul>
  </nav>`;
}

function OrgSwitcher() {
  const mine = me.value;
  if (orgs.value.length < 2) return html`<span class="org-name">${mine.org.name}</span>`;
  return html`<label class="org-switch">
    <span class="visually-hidden">Organisation</span>
    <select value=${mine.org.id} onChange=${(event) => switchOrg(event.currentTarget.value)}>
      ${orgs.value.map((org) => html`<option value=${org.id} selected=${org.id === mine.org.id}>${org.name}</option>`)}
    </select>
  </label>`;
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

/** Keeps the Errors badge (unresolved groups first seen in the last 24 hours) current. */
function useErrorBadge() {
  const refresh = () => {
    const since = new Date(Math.floor((Date.now() - 864e5) / 60000) * 60000).toISOString();
    api("/api/v1/error-groups", { query: { status: "unresolved", new_since: since, limit: 1 } }).then(
      (answer) => { badges.value = { ...badges.value, errors: answer.total || 0 }; },
      () => {},
    );
  };
  useEffect(refresh, []);
  useInterval(refresh, 60000);
}

export function Shell({ section, children }) {
  useErrorBadge();
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
