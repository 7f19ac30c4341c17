// Reported beside true, field by field. A report (what a tool told the agent) and the truth
// (the hidden state after the call) are nested JSON of each world's own shape; both are read
// here as flat lists of leaves (`health.green.status = "healthy"`) so that a step can say
// which true fields its call changed, and where the report names the same field as the truth
// with another value. Nothing is matched by guesswork: only an identical path counts as the
// same field (the world's lie ledger says the rest, in its own words).

export type Fields = Map<string, unknown>;

/** The leaves of a JSON value by dotted path. A list of plain values is one leaf (`violated =
 * ["S2"]`); a list of objects is walked by index (`lies.0.status`). An empty object or list is
 * a leaf of its own, so that it still shows. */
export function flatten(value: unknown, prefix = "", out: Fields = new Map()): Fields {
  const walkable =
    value !== null &&
    typeof value === "object" &&
    (Array.isArray(value) ? value.some((v) => v !== null && typeof v === "object") : Object.keys(value).length > 0);
  if (!walkable) {
    out.set(prefix, value);
    return out;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) flatten(child, prefix ? `${prefix}.${key}` : key, out);
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));
}

/** The paths of `after` that are new or hold another value than in `before` (every path of
 * `after` when there is no `before`: the first step's truth is all news). */
export function changedPaths(before: Fields | null, after: Fields): Set<string> {
  const out = new Set<string>();
  for (const [path, value] of after) {
    if (!before || !before.has(path) || !same(before.get(path), value)) out.add(path);
  }
  return out;
}

/** The paths that the report and the truth both hold, with different values. */
export function disagreements(reported: Fields, truth: Fields): Set<string> {
  const out = new Set<string>();
  for (const [path, value] of reported) {
    if (truth.has(path) && !same(truth.get(path), value)) out.add(path);
  }
  return out;
}

/** A leaf as one short line of text: strings bare, everything else as JSON. */
export function showValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "—";
  return JSON.stringify(value);
}

/** Some leaves as `path=value · path=value`, for a one-line summary. */
export function summarise(fields: Fields, paths?: Iterable<string>): string {
  const shown: string[] = [];
  for (const path of paths ?? fields.keys()) shown.push(`${path}=${showValue(fields.get(path))}`);
  return shown.join(" · ");
}
