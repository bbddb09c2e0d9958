// The terminal page (`/agents/{id}/terminal`): a shell on the agent's host in xterm.js, over the
// shell-ticket websocket (docs/agents.md). The emulator is loaded by this page only. Keystrokes
// and output are binary frames; the size follows the window. When the session ends, the
// server's close frame says why, and the page says it in words with a way to reconnect.
import { useEffect, useRef, useState } from "preact/hooks";
import { html } from "../html.js";
import { api } from "../api.js";
import { isAdmin } from "../session.js";
import { useLoad } from "../components/load.js";
import { PageHeader, LoadProblem } from "../components/page.js";

const XTERM = "/vendor/xterm@6.0.0";
const FIT = "/vendor/xterm-addon-fit@0.11.0/addon-fit.mjs";
/** Escape then Tab within this long leaves the terminal (Tab alone goes to the shell). */
const LEAVE_WINDOW_MS = 1000;

let library = null;
function loadLibrary() {
  if (!library) {
    const sheet = document.createElement("link");
    sheet.rel = "stylesheet";
    sheet.href = `${XTERM}/xterm.css`;
    document.head.appendChild(sheet);
    library = Promise.all([import(`${XTERM}/xterm.mjs`), import(FIT)])
      .then(([xterm, fit]) => ({ Terminal: xterm.Terminal, FitAddon: fit.FitAddon }))
      .catch((error) => { library = null; throw error; });
  }
  return library;
}

/**
 * The terminal's document must have been loaded at this address: its style policy lets the
 * emulator draw (the server sends it with this page only). Arriving by an in-app link, the page
 * loads itself once more.
 */
function loadedHere() {
  const entry = performance.getEntriesByType("navigation")[0];
  return !entry || new URL(entry.name).pathname === window.location.pathname;
}

/** What a close frame means, in words: `[sentence, whether reconnecting may help]`. */
export function endOf(code, reason, opened) {
  const detail = reason && reason.includes(": ") ? reason.slice(reason.indexOf(": ") + 2) : reason;
  switch (code) {
    case 1000: return [`The shell ended (${detail || "it exited"}).`, true];
    case 4410: return ["The agent disconnected, so the session ended. The agent reconnects by itself; reconnect once it is online.", true];
    case 4401: return ["Your access was revoked: your role, membership or sessions changed, so this terminal was closed. Opening a terminal needs the admin role.", false];
    case 4404: return ["The agent is offline: no terminal can open until it connects again.", true];
    case 4403: return ["This agent runs with --no-shell: it accepts no terminal sessions.", false];
    case 1001: return ["The server is shutting down.", true];
    default:
      if (!opened) return ["The terminal could not be opened: the ticket was refused, or the server could not be reached.", true];
      return [detail ? `The session ended: ${detail}.` : "The connection to the server was lost.", true];
  }
}

/** Runs one session into `term` until it ends; answers a function that closes it. */
function connect(agentId, term, fit, setState) {
  let socket = null;
  let opened = false;
  let closed = false;
  const encoder = new TextEncoder();
  const sendResize = () => {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
    }
  };
  const typed = term.onData((data) => {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
  });
  const resized = term.onResize(sendResize);
  setState({ phase: "connecting" });
  api(`/api/v1/agents/${encodeURIComponent(agentId)}/shell/ticket`, { method: "POST", body: {} }).then((ticket) => {
    if (closed) return;
    socket = new WebSocket(ticket.url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      opened = true;
      setState({ phase: "open" });
      fit.fit();
      sendResize();
      term.focus();
    };
    socket.onmessage = (event) => {
      if (event.data instanceof ArrayBuffer) term.write(new Uint8Array(event.data));
    };
    socket.onclose = (event) => {
      const [sentence, retry] = endOf(event.code, event.reason, opened);
      setState({ phase: "ended", sentence, retry, code: event.code });
    };
  }, (problem) => setState({ phase: "ended", sentence: problem.detail, retry: problem.status !== 403 }));
  return () => {
    closed = true;
    typed.dispose();
    resized.dispose();
    if (socket) { socket.onclose = null; socket.close(); }
  };
}

function Screen({ agent }) {
  const box = useRef(null);
  const [state, setState] = useState({ phase: "loading" });
  const [attempt, setAttempt] = useState(0);
  const terminal = useRef(null);
  useEffect(() => {
    let gone = false;
    let onWindowResize = null;
    loadLibrary().then(({ Terminal, FitAddon }) => {
      if (gone || !box.current) return;
      const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000,
        fontFamily: getComputedStyle(document.documentElement).getPropertyValue("--mono") || "monospace" });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(box.current);
      fit.fit();
      let escapeAt = 0;
      // xterm keeps Tab for the shell; Escape then Tab hands it back to the page.
      term.attachCustomKeyEventHandler((event) => {
        if (event.type !== "keydown") return true;
        if (event.key === "Escape") { escapeAt = Date.now(); return true; }
        if (event.key === "Tab" && Date.now() - escapeAt < LEAVE_WINDOW_MS) return false;
        return true;
      });
      onWindowResize = () => fit.fit();
      window.addEventListener("resize", onWindowResize);
      terminal.current = { term, fit };
      setAttempt(1);
    }, () => setState({ phase: "ended", sentence: "The terminal emulator did not load. Reload the page to try again.", retry: false }));
    return () => {
      gone = true;
      if (onWindowResize) window.removeEventListener("resize", onWindowResize);
      if (terminal.current) terminal.current.term.dispose();
    };
  }, []);
  useEffect(() => {
    if (!attempt || !terminal.current) return undefined;
    const { term, fit } = terminal.current;
    if (attempt > 1) term.reset();
    return connect(agent.id, term, fit, setState);
  }, [attempt]);
  return html`<div>
    <p class="meta" id="terminal-keys">The terminal keeps Tab for the shell. To move the focus out of it, press Escape, then Tab (or Shift+Tab).</p>
    <div class="terminal-status" role="status">
      ${state.phase === "connecting" && "Connecting…"}
      ${state.phase === "open" && html`Connected to ${agent.hostname}.`}
    </div>
    ${state.phase === "ended" && html`<div class="terminal-ended" role="alert">
      <p>${state.sentence}</p>
      ${state.retry && html`<button type="button" class="primary" onClick=${() => setAttempt(attempt + 1)}>Reconnect</button>`}
    </div>`}
    <div class="terminal-box" ref=${box} aria-describedby="terminal-keys"></div>
  </div>`;
}

export default function TerminalPage({ params }) {
  const id = params.id;
  const here = loadedHere();
  useEffect(() => { if (!here) window.location.reload(); }, [here]);
  const agent = useLoad((signal) => api(`/api/v1/agents/${encodeURIComponent(id)}`, { signal }), [id]);
  const data = agent.data;
  const back = html`<a class="button" href=${`/agents/${encodeURIComponent(id)}`}>Back to the agent</a>`;
  return html`<div class="terminal-page">
    <${PageHeader} title=${data ? `Terminal: ${data.name}` : "Terminal"} actions=${back} />
    <${LoadProblem} problem=${agent.problem} retry=${agent.reload} />
    ${data && !isAdmin.value && html`<p role="alert">Only admins of this organisation can open a terminal.</p>`}
    ${data && isAdmin.value && here && html`<${Screen} agent=${data} />`}
  </div>`;
}
