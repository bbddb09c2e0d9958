// The app's entry: finds the page for the address, makes sure someone is signed in when the
// page needs it (else sign-in, then back here), and renders it inside its frame.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { html } from "./html.js";
import { current, match, navigate } from "./router.js";
import { me, loadMe, signInPath } from "./session.js";
import { Shell, Plain } from "./components/layout.js";
import { installShortcuts } from "./components/keyboard.js";
import { NotFound } from "./components/page.js";

const modules = new Map();

/** The page component of a route, loaded once. */
function usePageModule(route) {
  const [, setLoaded] = useState(0);
  // The route whose module failed: a late failure of a page already left (a redirect to
  // sign-in) must not stand in for the page shown now.
  const [failed, setFailed] = useState(null);
  const ready = route && modules.get(route.path);
  useEffect(() => {
    if (!route || ready) return;
    route.load().then(
      (module) => { modules.set(route.path, module.default); setLoaded((n) => n + 1); },
      () => setFailed(route),
    );
  }, [route]);
  return { Page: ready, problem: !ready && !!route && failed === route };
}

function App() {
  const { path, query } = current.value;
  const found = match(path);
  const route = found && found.route;
  const { Page, problem } = usePageModule(route);
  const needsSession = !route || !route.public;

  useEffect(() => {
    if (needsSession && me.value === null) navigate(signInPath(), { replace: true });
  }, [needsSession, me.value]);
  // An organisation that requires a second factor opens nothing else until the person has one.
  const mustEnrol = !!me.value && me.value.org.two_factor_required && !me.value.user.two_factor_enabled;
  useEffect(() => {
    if (mustEnrol && needsSession && path !== "/profile") navigate("/profile", { replace: true });
  }, [mustEnrol, needsSession, path]);

  if (needsSession && !me.value) return html`<p class="boot" role="status">Loading Lookout…</p>`;
  const Frame = route && route.public ? Plain : Shell;
  let body;
  if (!route) body = html`<${NotFound} />`;
  else if (problem) body = html`<div class="error-summary" role="alert"><p>This page could not be loaded. Reload to try again.</p></div>`;
  else if (!Page) body = html`<p class="meta" role="status">Loading…</p>`;
  else body = html`<${Page} params=${found.params} query=${query} route=${route} key=${route.path} />`;
  return html`<${Frame} section=${route && route.section}>${body}</${Frame}>`;
}

installShortcuts();
loadMe().catch(() => { me.value = null; });
render(html`<${App} />`, document.getElementById("app"));
