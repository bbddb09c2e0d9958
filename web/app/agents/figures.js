// Host figures as people read them: shares of memory and disk in use, CPU and load, uptime.
// Shared by the agent list, the agent page and its charts.

/** Percent of `total` in use when `available` is left, or null when either is unknown. */
export function usedPercent(total, available) {
  if (!total || available === null || available === undefined) return null;
  return ((total - available) / total) * 100;
}

export const memoryPercent = (m) => (m ? usedPercent(m.memory_total_bytes, m.memory_available_bytes) : null);
export const diskPercent = (m) => (m ? usedPercent(m.disk_total_bytes, m.disk_available_bytes) : null);

/** `42 %`, or an em dash when unknown. */
export const percent = (value) => (value === null || value === undefined ? "—" : `${value.toFixed(value < 10 ? 1 : 0)} %`);

/** Bytes in binary units (`7.6 GiB`). */
export function bytes(value) {
  if (value === null || value === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let at = 0;
  let n = value;
  while (n >= 1024 && at < units.length - 1) { n /= 1024; at += 1; }
  return `${n.toFixed(at && n < 10 ? 1 : 0)} ${units[at]}`;
}

export const load = (value) => (value === null || value === undefined ? "—" : value.toFixed(2));

/** Uptime in days, hours or minutes. */
export function uptime(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds >= 86400) return `${Math.floor(seconds / 86400)} d ${Math.floor((seconds % 86400) / 3600)} h`;
  if (seconds >= 3600) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 60)} min`;
}

/** The command a host runs to enrol with `token`. */
export const enrolCommand = (token) => `lookout agent --server ${window.location.origin} --token ${token}`;
