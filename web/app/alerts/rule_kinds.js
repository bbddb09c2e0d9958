// What each kind of alert rule measures, in words, and how its values read.
export const KIND_NAMES = {
  error_count: "Error events", new_error_group: "New error groups", span_p95_ms: "Span p95 latency", agent_offline: "Agents offline",
};

export const KIND_OPTIONS = Object.entries(KIND_NAMES).map(([kind, name]) => [kind, name]);

/** Help for the fields whose meaning depends on the kind. */
export const KIND_HELP = {
  error_count: { threshold: "Error events (levels error and warning) in the window that make the condition true.", window: "How far back to count, in seconds.", service: "Only events of this service; empty for every service." },
  new_error_group: { threshold: "New error groups in the window; 1 alerts on the first new kind of error.", window: "How far back to look, in seconds.", service: "Only groups of this service; empty for every service." },
  span_p95_ms: { threshold: "The 95th percentile of span durations, in milliseconds, that makes the condition true.", window: "Spans that arrived in this many seconds.", service: "Only spans of this service; empty for every service." },
  agent_offline: { threshold: "How many agents must be offline; 1 alerts on the first.", window: "How long, in seconds, an agent must be gone to count.", service: "Only this agent (its name or hostname); empty for every agent." },
};

/** A measured value as it reads for the kind (milliseconds for latency, whole counts otherwise). */
export function formatValue(kind, value) {
  if (value === null || value === undefined) return "—";
  return kind === "span_p95_ms" ? `${Number(value).toFixed(1)} ms` : Number(value).toLocaleString();
}

/** The rule's current status; a server without readings falls back to the stored state. */
export function statusOf(rule) {
  if (rule.status) return rule.status;
  const state = !rule.enabled ? "disabled" : rule.state === "inactive" ? "ok" : rule.state;
  return { state, value: rule.last_value, measured_at: null, alert_id: rule.alert_id };
}
