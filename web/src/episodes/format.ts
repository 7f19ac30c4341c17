// Small words for numbers and calls, shared by the list and the viewer.

/** A reward or return: at most three decimals, no float noise (-499.00000000000006 → "-499"). */
export function formatNumber(x: number): string {
  const rounded = Number(x.toFixed(3));
  return Object.is(rounded, -0) ? "0" : String(rounded);
}

/** A reward with its sign: "+0.5", "-0.1", "0". */
export function formatSigned(x: number): string {
  const text = formatNumber(x);
  return text !== "0" && !text.startsWith("-") ? `+${text}` : text;
}

/** A call as the agent made it: `inspect(target="migration")`; a malformed one as its JSON. */
export function formatCall(tool: unknown, args: unknown): string {
  const name = typeof tool === "string" ? tool : JSON.stringify(tool);
  if (args === null || args === undefined) return `${name}()`;
  if (typeof args !== "object" || Array.isArray(args)) return `${name}(${JSON.stringify(args)})`;
  const inner = Object.entries(args)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(", ");
  return `${name}(${inner})`;
}

/** A stored time stamp (ISO 8601) in the reader's own zone, to the minute. */
export function formatWhen(iso: string): string {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso;
  return when.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}
