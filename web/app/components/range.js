// Time range presets of list pages (1 h, 24 h, 7 d, 30 d): kept in the URL as `range=24h`,
// turned into the API's `from` when a request is made, so a pasted link means "the last day".

const PRESETS = [["1h", "Last hour", 36e5], ["24h", "Last 24 hours", 864e5], ["7d", "Last 7 days", 6048e5], ["30d", "Last 30 days", 2592e6]];

/** [value, text] pairs for a Select, "Any time" first. */
export const RANGE_OPTIONS = [["", "Any time"], ...PRESETS.map(([value, text]) => [value, text])];

/** The RFC 3339 start of a preset (`"24h"`), or null for any time or an unknown value. */
export function rangeStart(range, now = Date.now()) {
  const preset = PRESETS.find(([value]) => value === range);
  return preset ? new Date(now - preset[2]).toISOString() : null;
}

/** A known preset, or "" (any time) for anything else found in a URL. */
export const knownRange = (range) => (PRESETS.some(([value]) => value === range) ? range : "");
