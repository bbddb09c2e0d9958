(() => {
/*! Lookout browser SDK: errors, sessions, spans, flags and experiments for one Lookout server.
 * The ES module; `lookout.iife.js` is this file wrapped by `build` for a plain <script> tag.
 * Never throws into the page, never reports its own failures, sends no cookies and no bodies. */
const VERSION = "0.1.0";
const PATHS = { e: ["web-errors", "events"], s: ["web-sessions", "sessions"], p: ["spans", "spans"], x: ["ab-uniques", "exposures"] };
// The server's limits (CONTRACT section 3) with headroom for the envelope; a beacon takes 64 KB.
const MAX_ITEMS = 100, MAX_BYTES = 200000, BEACON_BYTES = 60000, MAX_QUEUE = 1000, MAX_CRUMBS = 20;
const w = typeof window == "object" ? window : null, ls = safe(() => w.localStorage), now = () => Date.now();
let cfg = null, own = "", user, tags = {}, crumbs = [], queue = [], dropped = 0, pausedUntil = 0, failures = 0, sending = false;
let session, ab = { flags: {}, experiments: [] }, visitor, origFetch;

function safe(run, fallback) { try { return run(); } catch (_) { return fallback; } }
function guard(fn) { return function () { return safe(() => fn.apply(this, arguments)); }; }
const hex = (bytes) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => (b | 256).toString(16).slice(1)).join("");
const iso = (ms) => new Date(ms).toISOString();
const bare = (url) => safe(() => { const u = new URL(url, location.href); return u.origin + u.pathname; }, String(url));

/** Starts the SDK; the promise settles (never rejects) once flags and experiments are known. */
function start(options) {
  if (cfg || !w || !options || !options.endpoint || !options.key) return Promise.resolve();
  cfg = Object.assign({ release: undefined, environment: undefined, service: "web", sampleRate: 1, flushIntervalMs: 5000,
    tracePropagationTargets: [location.origin] }, options);
  own = cfg.endpoint.replace(/\/+$/, "");
  visitor = (ls && ls.getItem("lookout.visitor")) || hex(16);
  safe(() => ls.setItem("lookout.visitor", visitor));
  newSession();
  listen();
  setInterval(guard(sendQueued), cfg.flushIntervalMs);
  return loadConfig();
}

function base() {
  return { release: cfg.release, environment: cfg.environment, service: cfg.service };
}

/** A tab visit: at start, and again when the page comes back from the back-forward cache. */
function newSession() {
  session = { id: hex(16), started: now(), errors: 0 };
  sendSession();
}

function sendSession(ended) {
  const item = Object.assign(base(), { id: session.id, started_at: iso(session.started), url: location.href,
    referrer: document.referrer || undefined, user_agent: navigator.userAgent, user_id: user, page_views: 1, errors: session.errors });
  if (ended) Object.assign(item, { ended_at: iso(ended), duration_ms: ended - session.started });
  enqueue("s", item);
}

// ---- errors and breadcrumbs ----
function crumb(type, message) {
  crumbs.push({ type, message: String(message).slice(0, 200), timestamp: iso(now()) });
  if (crumbs.length > MAX_CRUMBS) crumbs.shift();
}

function report(level, message, error, extra) {
  if (!cfg || Math.random() >= cfg.sampleRate) return;
  let event = Object.assign(base(), { event_id: hex(16), level, message: String(message || "(no message)").slice(0, 10000),
    url: location.href, session_id: session.id, user_id: user, user_agent: navigator.userAgent, timestamp: iso(now()),
    tags: Object.assign({}, tags, extra && extra.tags), breadcrumbs: crumbs.slice() });
  if (error && typeof error == "object") Object.assign(event, { name: error.name, stack: typeof error.stack == "string" ? error.stack : undefined });
  if (dropped) event.tags["lookout.dropped"] = String(dropped);
  if (cfg.beforeSend) event = safe(() => cfg.beforeSend(event), event);
  if (!event) return;
  session.errors += level == "error" ? 1 : 0;
  enqueue("e", event);
  return event.event_id;
}

/** Reports an error (an Error, or any value) by hand; returns its event id. */
function captureError(error, extra) {
  const message = error && typeof error == "object" ? error.message : error;
  return report("error", message, error, extra);
}

/** Reports a message as a `warning` (or `error`); returns its event id. */
function captureText(message, level, extra) {
  return report(level == "error" ? "error" : "warning", message, null, extra);
}

function assignUser(value) { user = value == null ? undefined : String(typeof value == "object" ? value.id : value); }
function assignTag(key, value) { tags[key] = String(value); }

// ---- spans: page load, fetch, XHR ----
function span(name, start, end, attributes, status, traceId, spanId) {
  enqueue("p", Object.assign(base(), { trace_id: traceId || hex(16), span_id: spanId || hex(8), name, kind: "client",
    start_time: iso(start), duration_ms: Math.max(0, end - start), status, attributes, session_id: session.id }));
}

function propagates(url) {
  const target = safe(() => new URL(url, location.href).href, "");
  return (cfg.tracePropagationTargets || []).some((t) => (t instanceof RegExp ? t.test(target)
    : target.startsWith(t.endsWith("/") ? t : t + "/") || target == t));
}

/** Times one request: returns the traceparent to send (or null) and the function that ends it. */
function request(method, url) {
  const started = now(), traceId = hex(16), spanId = hex(8), address = bare(url);
  method = String(method || "GET").toUpperCase();
  return [propagates(url) ? `00-${traceId}-${spanId}-01` : null, guard((status) => {
    span(`${method} ${address}`, started, now(), { "http.method": method, "http.url": address, "http.status_code": status },
      status && status < 400 ? "ok" : "error", traceId, spanId);
    if (!status || status >= 400) crumb("request", `${method} ${address} ${status || "failed"}`);
  })];
}

function pageLoad() {
  const entry = performance.getEntriesByType("navigation")[0];
  if (!entry) return;
  const origin = performance.timeOrigin, address = bare(location.href);
  span("page load", origin + entry.startTime, origin + entry.loadEventEnd, { "http.url": address,
    "time_to_first_byte_ms": Math.round(entry.responseStart), "dom_content_loaded_ms": Math.round(entry.domContentLoadedEventEnd),
    "transfer_size": entry.transferSize }, "ok");
}

function instrumentFetch() {
  origFetch = w.fetch;
  if (!origFetch) return;
  w.fetch = function (input, options) {
    const url = typeof input == "string" ? input : (input && input.url) || String(input);
    if (url.startsWith(own)) return origFetch.apply(this, arguments);
    const [parent, end] = safe(() => request((options && options.method) || (input && input.method), url), []);
    if (parent) {
      options = Object.assign({}, options);
      const headers = new Headers(options.headers || (input instanceof Request ? input.headers : undefined));
      headers.set("traceparent", parent);
      options.headers = headers;
    }
    const answer = origFetch.call(this, input, options);
    if (end) answer.then((r) => end(r.status), () => end(0));
    return answer;
  };
}

function instrumentXhr() {
  const proto = w.XMLHttpRequest && XMLHttpRequest.prototype;
  if (!proto) return;
  const open = proto.open, send = proto.send;
  proto.open = function (method, url) { this._lookout = [method, String(url)]; return open.apply(this, arguments); };
  proto.send = function () {
    const seen = this._lookout;
    if (seen && !seen[1].startsWith(own)) {
      const [parent, end] = safe(() => request(seen[0], seen[1]), []);
      if (parent) safe(() => this.setRequestHeader("traceparent", parent));
      if (end) this.addEventListener("loadend", () => end(this.status));
    }
    return send.apply(this, arguments);
  };
}

// ---- listeners ----
function listen() {
  w.addEventListener("error", guard((e) => {
    if (e.error || e.message) report("error", e.error && e.error.message || e.message, e.error);
  }));
  w.addEventListener("unhandledrejection", guard((e) => {
    const r = e.reason;
    const message = r && typeof r == "object" && "message" in r ? r.message : `Unhandled rejection: ${safe(() => JSON.stringify(r)) || r}`;
    report("error", message, r);
  }));
  document.addEventListener("click", guard((e) => {
    const t = e.target;
    if (t && t.tagName) crumb("click", t.tagName.toLowerCase() + (t.id ? "#" + t.id : "") + " " + (t.textContent || "").trim().slice(0, 40));
  }), true);
  for (const kind of ["pushState", "replaceState"]) {
    const original = history[kind];
    history[kind] = function () { const r = original.apply(this, arguments); crumb("navigation", bare(location.href)); return r; };
  }
  w.addEventListener("popstate", guard(() => crumb("navigation", bare(location.href))));
  w.addEventListener("pagehide", guard(() => { sendSession(now()); sendQueued(true); }));
  w.addEventListener("pageshow", guard((e) => e.persisted && newSession()));
  const loaded = guard(() => setTimeout(guard(pageLoad), 0));
  document.readyState == "complete" ? loaded() : w.addEventListener("load", loaded);
  safe(instrumentFetch);
  safe(instrumentXhr);
}

// ---- flags and experiments ----
function loadConfig() {
  const cached = safe(() => JSON.parse(ls.getItem("lookout.ab")), null);
  if (cached) ab = cached;
  // `no-cache` makes the browser revalidate with the ETag it kept (If-None-Match, a 304 served
  // from its cache); no header of our own, so no preflight. The copy in localStorage answers
  // `variant` and `flag` at once on the next page.
  return origFetch(url("ab-config", true), { credentials: "omit", cache: "no-cache" }).then((r) => r.ok && r.json().then((config) => {
    ab = config;
    safe(() => ls.setItem("lookout.ab", JSON.stringify(config)));
  })).catch(() => {});
}

function bucket(text) {
  let h = 2166136261; // FNV-1a: stable in every browser, no crypto needed
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

/** A feature flag's value from `ab-config`, or `fallback` when it is not set. */
function flagValue(name, fallback) {
  const flags = ab.flags || {};
  return name in flags ? flags[name] : fallback;
}

/** This visitor's variant of an active experiment (stable across reloads), or null; counts the exposure once a day. */
function variantOf(key) {
  const experiment = (ab.experiments || []).find((x) => x.key == key && x.active);
  const variants = experiment ? experiment.variants || [] : [];
  const total = variants.reduce((sum, v) => sum + (v.weight > 0 ? v.weight : 0), 0);
  if (!cfg || !total) return null;
  let point = (bucket(visitor + ":" + key) / 4294967296) * total, chosen = variants[variants.length - 1];
  for (const v of variants) if ((point -= v.weight > 0 ? v.weight : 0) < 0) { chosen = v; break; }
  const day = iso(now()).slice(0, 10), seen = safe(() => JSON.parse(ls.getItem("lookout.exposed")), null) || {};
  const mark = key + ":" + chosen.key;
  if (seen[mark] != day) {
    seen[mark] = day;
    safe(() => ls.setItem("lookout.exposed", JSON.stringify(seen)));
    enqueue("x", { experiment: key, variant: chosen.key, visitor_id: visitor, timestamp: iso(now()) });
  }
  return chosen.key;
}

// ---- transport ----
function enqueue(kind, item) {
  queue.push([kind, item]);
  while (queue.length > MAX_QUEUE) { queue.shift(); dropped++; }
}

/** Groups queued items into requests under the server's limits: [[kind, [items], bytes]]. */
function batches(items, limit) {
  const out = [];
  for (const [kind, item] of items) {
    const size = JSON.stringify(item).length + 1;
    let last = out.findLast((b) => b[0] == kind);
    if (!last || last[1].length >= MAX_ITEMS || last[2] + size > limit) out.push(last = [kind, [], 30]);
    last[1].push(item);
    last[2] += size;
  }
  return out;
}

const url = (kind, key) => `${own}/ingest/${PATHS[kind] ? PATHS[kind][0] : kind}${key ? "?key=" + encodeURIComponent(cfg.key) : ""}`;
const body = (kind, items) => JSON.stringify({ [PATHS[kind][1]]: items });

/** Sends what is queued; with `closing` (pagehide), through sendBeacon, else fetch(keepalive). */
function sendQueued(closing) {
  if (!cfg) return Promise.resolve();
  if (closing === true) {
    const items = queue.splice(0);
    for (const [kind, list] of batches(items, BEACON_BYTES)) {
      const text = body(kind, list);
      if (!safe(() => navigator.sendBeacon(url(kind, true), new Blob([text], { type: "text/plain" })), false))
        safe(() => origFetch(url(kind, true), { method: "POST", body: text, keepalive: true, credentials: "omit",
          headers: { "Content-Type": "text/plain" } }).catch(() => {}));
    }
    return Promise.resolve();
  }
  if (sending || now() < pausedUntil || !queue.length) return Promise.resolve();
  sending = true;
  const items = queue.splice(0);
  return postInTurn(batches(items, MAX_BYTES))
    .catch(() => {}).then(() => { sending = false; });
}

/** Posts batches one at a time (one keepalive request in flight, within the browser's quota);
 * once a refusal has paused sending, the rest go back to the queue in order. */
function postInTurn(list) {
  const next = list.shift();
  if (!next) return Promise.resolve();
  if (now() < pausedUntil) {
    putBack([next, ...list].flatMap(([kind, items]) => items.map((item) => [kind, item])));
    return Promise.resolve();
  }
  return post(next[0], next[1]).then(() => postInTurn(list));
}

/** Posts one batch: 429/503 pause for Retry-After, 413 splits, network errors back off; others drop. */
function post(kind, items) {
  const text = body(kind, items);
  // keepalive lets a batch in flight outlive the page, but browsers refuse it over 64 KB; the
  // timeout keeps a request that never answers from holding the queue.
  return origFetch(url(kind), { method: "POST", body: text, credentials: "omit", keepalive: text.length < BEACON_BYTES,
    signal: AbortSignal.timeout && AbortSignal.timeout(30000),
    headers: { "Content-Type": "application/json", "X-Lookout-Key": cfg.key } }).then((r) => {
    if (r.ok) { failures = 0; return; }
    if (r.status == 429 || r.status == 503) {
      const wait = parseFloat(r.headers.get("Retry-After"));
      pausedUntil = now() + (wait >= 0 ? wait * 1000 : 60000);
      return requeue(kind, items);
    }
    if (r.status == 413 && items.length > 1) {
      const half = items.length >> 1;
      return post(kind, items.slice(0, half)).then(() => post(kind, items.slice(half)));
    }
    if (r.status >= 500) return retry(kind, items);
    dropped += items.length; // refused for good (bad key, bad payload, one item too large)
  }, () => retry(kind, items));
}

function requeue(kind, items) {
  putBack(items.map((item) => [kind, item]));
}

/** Puts items back at the front of the queue; the queue keeps its bound (oldest dropped). */
function putBack(pairs) {
  queue.unshift(...pairs);
  while (queue.length > MAX_QUEUE) { queue.shift(); dropped++; }
}

function retry(kind, items) {
  failures++;
  pausedUntil = now() + Math.min(60000, 1000 * 2 ** failures) * (0.5 + Math.random() / 2);
  requeue(kind, items);
}

const Lookout = { init: guard(start), captureException: guard(captureError), captureMessage: guard(captureText),
  setUser: guard(assignUser), setTag: guard(assignTag), flag: guard(flagValue), variant: guard(variantOf),
  flush: () => safe(sendQueued) || Promise.resolve(), version: VERSION };
window.Lookout = Lookout;
})();
