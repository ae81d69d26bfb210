/**
 * The settings the extension sends to the server: every key of the `budgetlens` section except
 * `server.*` and `trace.*` (those only tell the extension how to start and log the server, and
 * the server reports keys it does not know). Pure, so the filtering is unit-tested.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keys of the `budgetlens` section that the extension itself consumes. */
export const CLIENT_ONLY_KEYS: readonly string[] = ['server', 'trace'];

/** The server's view of the `budgetlens` section: a plain JSON object without client-only keys. */
export function serverSettings(section: Readonly<Record<string, unknown>>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(section)) {
    if (CLIENT_ONLY_KEYS.includes(key) || typeof value === 'function' || value === undefined) {
      continue;
    }
    out[key] = JSON.parse(JSON.stringify(value)) as Json;
  }
  return out;
}
