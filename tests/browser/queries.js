// Finds elements the way a person does: by role and accessible name, by label, by visible text.
// Evaluated through the DevTools protocol (never a <script>: the page's CSP allows none), once
// per document; later evaluations reuse `window.__lookoutQueries`.
//
// The accessible name is a simplified form of the W3C computation: aria-labelledby, aria-label,
// <label for> or a wrapping <label>, alt, the text content for roles named by their content,
// then title and placeholder. Roles are the explicit `role` or the element's implicit one.
(() => {
  if (window.__lookoutQueries) return window.__lookoutQueries;

  const squash = (text) => (text || "").replace(/\s+/g, " ").trim();
  const TEXTBOX_TYPES = ["text", "email", "password", "search", "tel", "url"];
  const NAMED_BY_CONTENT = new Set([
    "button", "link", "heading", "cell", "columnheader", "rowheader", "row", "tab", "option",
    "menuitem", "radio", "checkbox", "switch", "tooltip", "treeitem", "listitem",
  ]);
  const CONTROLS = new Set(["INPUT", "SELECT", "TEXTAREA"]);

  /** Rendered and not hidden from assistive technology (visually-hidden text still counts). */
  function shown(element) {
    if (element.closest("[aria-hidden=true], [hidden], [inert]")) return false;
    return element.checkVisibility({ visibilityProperty: true });
  }

  function implicitRole(element) {
    const tag = element.tagName;
    const type = (element.getAttribute("type") || "text").toLowerCase();
    switch (tag) {
      case "BUTTON": case "SUMMARY": return "button";
      case "A": case "AREA": return element.hasAttribute("href") ? "link" : null;
      case "TEXTAREA": return "textbox";
      case "SELECT": return element.multiple || element.size > 1 ? "listbox" : "combobox";
      case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
      case "TR": return "row";
      case "TD": return "cell";
      case "TH": return element.getAttribute("scope") === "row" ? "rowheader" : "columnheader";
      case "TABLE": return "table";
      case "UL": case "OL": return "list";
      case "LI": return "listitem";
      case "DIALOG": return "dialog";
      case "NAV": return "navigation";
      case "MAIN": return "main";
      case "FORM": return "form";
      case "OUTPUT": return "status";
      case "PROGRESS": return "progressbar";
      case "OPTION": return "option";
      case "IMG": return element.getAttribute("alt") === "" ? "presentation" : "img";
      case "SECTION": return element.hasAttribute("aria-label") || element.hasAttribute("aria-labelledby") ? "region" : null;
      case "INPUT":
        if (["button", "submit", "reset", "image"].includes(type)) return "button";
        if (type === "checkbox" || type === "radio") return type;
        if (type === "number") return "spinbutton";
        return TEXTBOX_TYPES.includes(type) ? "textbox" : null;
      default: return null;
    }
  }

  const roleOf = (element) => (element.getAttribute("role") || "").trim().split(/\s+/)[0] || implicitRole(element);

  /** The text a person hears for `node`'s content: hidden parts left out, images by their alt. */
  function contentText(node, skipControls) {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE || !shown(node)) return "";
    if (skipControls && CONTROLS.has(node.tagName)) return "";
    if (node.tagName === "IMG") return node.getAttribute("alt") || "";
    const label = node.getAttribute("aria-label");
    if (label) return label;
    return Array.from(node.childNodes, (child) => contentText(child, skipControls)).join(" ");
  }

  function accessibleName(element) {
    const labelledBy = element.getAttribute("aria-labelledby");
    if (labelledBy) {
      const parts = labelledBy.split(/\s+/).map((id) => document.getElementById(id));
      return squash(parts.filter(Boolean).map((part) => part.textContent).join(" "));
    }
    const label = element.getAttribute("aria-label");
    if (label && squash(label)) return squash(label);
    if (CONTROLS.has(element.tagName)) {
      const type = (element.getAttribute("type") || "").toLowerCase();
      if (["button", "submit", "reset"].includes(type)) return squash(element.value) || "Submit";
      if (type === "image") return squash(element.getAttribute("alt"));
      const labels = Array.from(element.labels || [], (each) => squash(contentText(each, true)));
      if (labels.some(Boolean)) return labels.filter(Boolean).join(" ");
    }
    if (element.tagName === "IMG") return squash(element.getAttribute("alt"));
    if (NAMED_BY_CONTENT.has(roleOf(element))) {
      const text = squash(contentText(element, false));
      if (text) return text;
    }
    return squash(element.getAttribute("title") || element.getAttribute("placeholder"));
  }

  const headingLevel = (element) => Number(element.getAttribute("aria-level")) || Number(element.tagName.slice(1)) || null;

  function matchesRole(element, spec) {
    const role = roleOf(element);
    const alias = spec.role === "textbox" && role === "searchbox";
    if (role !== spec.role && !alias) return false;
    if (spec.level && headingLevel(element) !== spec.level) return false;
    return spec.name == null || accessibleName(element) === squash(spec.name);
  }

  /** The innermost shown elements whose own visible text contains `text`. */
  function byText(text) {
    const wanted = squash(text);
    const holders = Array.from(document.body.querySelectorAll("*")).filter(
      (element) => shown(element) && squash(element.innerText).includes(wanted),
    );
    return holders.filter((element) => !holders.some((other) => other !== element && element.contains(other)));
  }

  /** Every shown element `spec` describes: `{role, name, level}`, `{label}` or `{text}`. */
  function findAll(spec) {
    if (spec.text !== undefined) return byText(spec.text);
    const all = Array.from(document.querySelectorAll("*")).filter(shown);
    if (spec.label !== undefined) {
      const wanted = squash(spec.label);
      return all.filter((element) => CONTROLS.has(element.tagName) && accessibleName(element) === wanted);
    }
    return all.filter((element) => matchesRole(element, spec));
  }

  /** The one element `spec` describes, or a sentence saying why there is not exactly one. */
  function findOne(spec) {
    const found = findAll(spec);
    if (found.length === 1) return { element: found[0] };
    return { problem: found.length === 0 ? "nothing matches" : `${found.length} elements match` };
  }

  /** Where to click `spec`'s element, once it is in view, enabled and not covered. */
  function clickPoint(spec) {
    const { element, problem } = findOne(spec);
    if (!element) return { problem };
    if (element.disabled || element.getAttribute("aria-disabled") === "true") return { problem: "it is disabled" };
    element.scrollIntoView({ block: "center", inline: "center" });
    // A link that wraps has several boxes; the middle of their union may be outside all of them,
    // so aim at the middle of the first line, as a person would.
    const box = element.getClientRects()[0] || element.getBoundingClientRect();
    const x = box.left + box.width / 2;
    const y = box.top + box.height / 2;
    const top = document.elementFromPoint(x, y);
    if (!top || !(element === top || element.contains(top) || (element.labels && Array.from(element.labels).includes(top)))) {
      return { problem: "another element covers it" };
    }
    return { x, y };
  }

  /** Focuses `spec`'s field and selects its content, so typed text replaces it. */
  function focusField(spec) {
    const { element, problem } = findOne(spec);
    if (!element) return { problem };
    if (element.disabled || element.readOnly) return { problem: "it is disabled or read-only" };
    element.scrollIntoView({ block: "center" });
    element.focus();
    if (typeof element.select === "function") element.select();
    return document.activeElement === element ? { focused: true } : { problem: "it does not take focus" };
  }

  function textOf(spec) {
    const { element, problem } = findOne(spec);
    return element ? { text: squash(element.innerText || element.value || "") } : { problem };
  }

  return (window.__lookoutQueries = { findAll, findOne, clickPoint, focusField, textOf, accessibleName, roleOf });
})()
