// Keyboard shortcuts: `/` search, `g` then a letter to go somewhere, `?` lists them all.
// Lists add `j`/`k`/Enter/`r` through `useListKeys`.
import { signal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { navigate } from "../router.js";
import { html } from "../html.js";
import { Dialog } from "./dialog.js";

export const helpOpen = signal(false);

/** Runs `action` when `key` is pressed outside fields and dialogs, without modifiers. */
export function useKey(key, action, enabled = true) {
  useEffect(() => {
    if (!enabled) return undefined;
    const onKey = (event) => {
      if (event.key !== key || event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey) return;
      if (typing(event.target) || document.querySelector("[role=dialog]")) return;
      event.preventDefault();
      action();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [key, action, enabled]);
}
const GO = { o: "/", e: "/errors", s: "/sessions", a: "/alerts", i: "/incidents" };
export const SHORTCUTS = [
  ["/", "Search errors"], ["g o", "Go to the overview"], ["g e", "Go to errors"], ["g s", "Go to sessions"],
  ["g a", "Go to alerts"], ["g i", "Go to incidents"], ["j / k", "Next / previous row in a list"],
  ["Enter", "Open the selected row"], ["r", "Resolve the selected error group, or the one open"], ["Esc", "Close a dialog"],
  ["?", "Show these shortcuts"],
];

/** Whether a key pressed in `target` is text being typed (shortcuts stay out of its way). */
export const typing = (target) => target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));

let pendingG = false;
export function installShortcuts() {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) return;
    if (pendingG) {
      pendingG = false;
      if (GO[event.key]) { event.preventDefault(); navigate(GO[event.key]); }
      return;
    }
    if (event.key === "g") { pendingG = true; setTimeout(() => { pendingG = false; }, 1500); return; }
    if (event.key === "/") {
      const search = document.getElementById("global-search");
      if (search) { event.preventDefault(); search.focus(); }
    } else if (event.key === "?") {
      event.preventDefault();
      helpOpen.value = true;
    }
  });
}

export function ShortcutHelp() {
  if (!helpOpen.value) return null;
  return html`<${Dialog} title="Keyboard shortcuts" onClose=${() => { helpOpen.value = false; }}>
    <dl class="shortcuts">${SHORTCUTS.map(([keys, what]) => html`<dt><kbd>${keys}</kbd></dt><dd>${what}</dd>`)}</dl>
  </${Dialog}>`;
}

/**
 * `j`/`k` move a selection through `count` rows, Enter opens the selected one, and any other key
 * in `extra` ({key: (index) => …}) acts on it. Answers the selected index through `setSelected`.
 */
export function useListKeys(count, selected, setSelected, { open, extra = {} } = {}) {
  useEffect(() => {
    const onKey = (event) => {
      if (event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) return;
      if (document.querySelector("[role=dialog]")) return;
      if (event.key === "j") { event.preventDefault(); setSelected(Math.min(count - 1, selected + 1)); }
      else if (event.key === "k") { event.preventDefault(); setSelected(Math.max(0, selected - 1)); }
      else if (event.key === "Enter" && selected >= 0 && open) { event.preventDefault(); open(selected); }
      else if (extra[event.key] && selected >= 0) { event.preventDefault(); extra[event.key](selected); }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [count, selected, open]);
}
