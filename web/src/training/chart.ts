// The arithmetic of a line chart: ticks, scales and the moving average of a noisy curve.

/** A curve as the server sends it: `[step, value]` points, in step order. */
export type Points = [number, number][];
export type Curves = Record<string, Points>;

/** About `count` round tick values covering [low, high] (1, 2 or 5 times a power of ten apart). */
export function ticks(low: number, high: number, count = 5): number[] {
  if (!Number.isFinite(low) || !Number.isFinite(high)) return [];
  if (high === low) return [low];
  const raw = (high - low) / Math.max(count, 1);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) {
    out.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)));
  }
  return out;
}

/** The extent of every point's step and value, widened where flat. */
export function extent(series: Points[]): { x: [number, number]; y: [number, number] } | null {
  const all = series.flat();
  if (all.length === 0) return null;
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const [x, y] of all) {
    x0 = Math.min(x0, x);
    x1 = Math.max(x1, x);
    y0 = Math.min(y0, y);
    y1 = Math.max(y1, y);
  }
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  return { x: [x0, x1], y: [y0, y1] };
}

/** A linear map from `domain` onto `range`. */
export function scale([d0, d1]: [number, number], [r0, r1]: [number, number]): (v: number) => number {
  return (v) => r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

/** Each value's mean with the `width - 1` before it (fewer at the start), as the server's plot. */
export function movingAverage(points: Points, width: number): Points {
  const out: Points = [];
  let sum = 0;
  points.forEach(([x, y], i) => {
    sum += y;
    if (i >= width) sum -= points[i - width][1];
    out.push([x, sum / Math.min(i + 1, width)]);
  });
  return out;
}

/** An SVG path through the points. */
export function path(points: Points, x: (v: number) => number, y: (v: number) => number): string {
  return points.map(([a, b], i) => `${i ? "L" : "M"}${x(a).toFixed(1)},${y(b).toFixed(1)}`).join("");
}

/** A number short enough for an axis: 4096 → "4,096", 0.000312 → "3.12e-4". */
export function short(v: number): string {
  if (v !== 0 && Math.abs(v) < 1e-3) return v.toExponential(2);
  if (Math.abs(v) >= 1e5) return v.toExponential(1).replace("e+", "e");
  return Number(v.toPrecision(4)).toLocaleString("en");
}

/** The curves worth showing first (as the server's plot.png), then the rest by name. */
export const FIRST = [
  "return",
  "safe",
  "dev_return",
  "dev_safe",
  "test_return",
  "test_safe",
  "loss",
  "eval_loss",
  "reward",
  "judged/return",
  "judged/safe",
  "learning_rate",
];

export function ordered(keys: string[]): string[] {
  const first = FIRST.filter((k) => keys.includes(k));
  return [...first, ...keys.filter((k) => !first.includes(k)).sort()];
}
