// The frame of every settings page: a secondary navigation of the settings sections (the
// current one marked), then the page itself. Sections an admin manages say so to others.
import { html } from "../html.js";

export const SECTIONS = [
  { key: "organisation", href: "/settings", label: "Organisation" },
  { key: "members", href: "/settings/members", label: "Members" },
  { key: "api-keys", href: "/settings/api-keys", label: "API keys" },
  { key: "webhooks", href: "/settings/webhooks", label: "Webhooks" },
  { key: "inbound-tokens", href: "/settings/inbound-tokens", label: "Inbound tokens" },
  { key: "ingest", href: "/settings/ingest", label: "Ingest" },
  { key: "services", href: "/settings/services", label: "Services" },
  { key: "sso", href: "/settings/sso", label: "Single sign-on" },
  { key: "scim", href: "/settings/scim", label: "SCIM" },
  { key: "audit", href: "/settings/audit", label: "Audit log" },
];

/** `current`: the `key` of the section shown. */
export function SettingsFrame({ current, children }) {
  return html`<div class="settings">
    <nav class="subnav" aria-label="Settings">
      <ul>${SECTIONS.map((section) => html`<li><a href=${section.href}
        aria-current=${section.key === current ? "page" : undefined}>${section.label}</a></li>`)}</ul>
    </nav>
    <div class="settings-page">${children}</div>
  </div>`;
}
