// The services and environments the server has seen (`GET /api/v1/services`), as options for
// the filter bars of list pages.
import { api } from "../api.js";
import { useLoad } from "./load.js";

/** A value from the URL stays selectable even when the server's list does not name it. */
const withValue = (options, value) => (!value || options.some(([option]) => option === value) ? options : [...options, [value, value]]);

/** `{services, environments}`: [value, text] pairs, "All …" first, the current choices included. */
export function useServiceOptions({ service, environment }) {
  const registry = useLoad((signal) => api("/api/v1/services", { query: { limit: 100 }, signal }), []);
  const items = (registry.data && registry.data.items) || [];
  const environments = [...new Set(items.flatMap((item) => item.environments || []))].sort();
  return {
    services: withValue([["", "All services"], ...items.map((item) => [item.name, item.name])], service),
    environments: withValue([["", "All environments"], ...environments.map((name) => [name, name])], environment),
  };
}
