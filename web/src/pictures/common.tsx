// What the three world pictures share: the tones of the outcome palette (each with its icon and
// word, so colour is never the only sign), the stale mark, SVG boxes and badges, gauges, and
// the reported/true pair layout. Plain SVG with fixed geometry: the topologies are known, so
// nothing is measured or laid out at run time.
import { useId, type ReactNode } from "react";
import type { Schemas } from "../api/client";
import { Truth } from "../components/Truth";

export type Lie = Schemas["Lie"];

/** ``data-*`` attributes for tests and styles to find an element by what it shows. */
export type DataAttrs = Record<`data-${string}`, string | number | boolean | undefined>;

/** What a mark means: calm (as it should be), harm (something is wrong), unknown (unread or
 * unfinished). The outcome palette's three colours, nothing else carries meaning. */
export type Tone = "ok" | "bad" | "unknown";

export const TONE_ICON: Record<Tone, string> = { ok: "✓", bad: "✗", unknown: "…" };
/** The stale mark: evidence gathered before the last change it describes. */
export const STALE_ICON = "◷";

/** Roughly how wide a line of SVG text is (the pictures' font, ~0.6 em a character): enough to
 * size a badge without measuring the DOM. */
export function textWidth(text: string, size = 11): number {
  return Math.ceil(text.length * size * 0.6);
}

/** Minutes, as the worlds' clocks count them (``12.5`` → "12.5 min"). */
export function minutes(value: number): string {
  return `${Number.isInteger(value) ? value : value.toFixed(1)} min`;
}

/** A count and its noun ("1 call", "3 calls"). */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

export function percent(fraction: number, digits = 0): string {
  return `${(100 * fraction).toFixed(digits)}%`;
}

/** An SVG picture with its accessible name: a <title> that names it, role img. */
export function Svg({
  title,
  width,
  height,
  testid,
  className,
  children,
}: {
  title: string;
  width: number;
  height: number;
  testid?: string;
  className?: string;
  children: ReactNode;
}) {
  const id = useId();
  return (
    <svg
      className={className ? `pic-svg ${className}` : "pic-svg"}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-labelledby={id}
      data-testid={testid}
      preserveAspectRatio="xMidYMin meet"
    >
      <title id={id}>{title}</title>
      {children}
    </svg>
  );
}

/** A labelled box of a topology: a title line and the lines under it. */
export function Box({
  x,
  y,
  w,
  h,
  title,
  tone,
  dashed,
  testid,
  data,
  children,
}: {
  x: number;
  y: number;
  w: number;
  h: number;
  title: string;
  tone?: Tone;
  dashed?: boolean;
  testid?: string;
  data?: DataAttrs;
  children?: ReactNode;
}) {
  return (
    <g
      className={`pic-box${tone ? ` pic-tone-${tone}` : ""}${dashed ? " pic-dashed" : ""}`}
      data-testid={testid}
      {...data}
    >
      <rect x={x} y={y} width={w} height={h} rx={5} />
      <text x={x + 8} y={y + 17} className="pic-title">
        {title}
      </text>
      {children}
    </g>
  );
}

/** A line of text in a box, ``row`` lines under its title. */
export function Line({
  x,
  y,
  row,
  children,
  tone,
}: {
  x: number;
  y: number;
  row: number;
  children: ReactNode;
  tone?: Tone;
}) {
  return (
    <text x={x + 8} y={y + 17 + 16 * row} className={tone ? `pic-text-${tone}` : undefined}>
      {children}
    </text>
  );
}

/** A status badge: icon and word on the tone's background; a stale one is drawn dashed (and
 * says so in a line of its own beside it). */
export function Badge({
  x,
  y,
  tone,
  text,
  stale,
  testid,
  data,
}: {
  x: number;
  y: number;
  tone: Tone;
  text: string;
  stale?: boolean;
  testid?: string;
  data?: DataAttrs;
}) {
  const label = `${TONE_ICON[tone]} ${text}`;
  return (
    <g
      className={`pic-badge pic-tone-${tone}${stale ? " pic-stale" : ""}`}
      data-testid={testid}
      data-stale={stale ? "true" : "false"}
      {...data}
    >
      <rect x={x} y={y} width={textWidth(label, 11) + 10} height={17} rx={3} />
      <text x={x + 5} y={y + 12.5} className="pic-badge-text">
        {label}
      </text>
    </g>
  );
}

/** A horizontal gauge: how much of something is left (or used), with its figure in words. */
export interface GaugeSpec {
  name: string;
  label: string;
  value: number;
  max: number;
  /** The figure as said beside the bar ("6 of 16 left"). */
  text: string;
  /** Low is bad for what is left: below a fifth the bar turns to harm. */
  tone?: Tone;
}

export function Gauges({ title, gauges }: { title: string; gauges: GaugeSpec[] }) {
  const row = 26;
  const barX = 150;
  const barW = 190;
  return (
    <Svg title={title} width={520} height={gauges.length * row + 6} testid="gauges" className="pic-gauges">
      {gauges.map((g, i) => {
        const fraction = g.max > 0 ? Math.max(0, Math.min(1, g.value / g.max)) : 0;
        const tone = g.tone ?? "ok";
        const y = 4 + i * row;
        return (
          <g
            key={g.name}
            data-testid="gauge"
            data-name={g.name}
            data-value={g.value}
            className={`pic-gauge pic-tone-${tone}`}
          >
            <text x={0} y={y + 14}>
              {g.label}
            </text>
            <rect className="pic-gauge-track" x={barX} y={y + 3} width={barW} height={14} rx={3} />
            <rect className="pic-gauge-fill" x={barX} y={y + 3} width={barW * fraction} height={14} rx={3} />
            <text x={barX + barW + 8} y={y + 14}>
              {TONE_ICON[tone]} {g.text}
            </text>
          </g>
        );
      })}
    </Svg>
  );
}

/** What is left of a budget: harm when under a fifth remains, calm otherwise. */
export function leftTone(value: number, max: number): Tone {
  return max > 0 && value / max < 0.2 ? "bad" : "ok";
}

/** The reported picture and, once the episode has ended, the true one beside it (stacked when
 * the column is narrow). Everything of the true one is inside <Truth>. */
export function Pair({ reported, truth }: { reported: ReactNode; truth?: ReactNode }) {
  return (
    <div className={truth ? "pic-pair" : undefined}>
      <div className="pic-side">
        {truth && <p className="pic-side-title">As reported</p>}
        {reported}
      </div>
      {truth && (
        <Truth as="div" className="pic-side pic-true">
          <p className="pic-side-title">
            <span aria-hidden="true">◆</span> The truth
          </p>
          {truth}
        </Truth>
      )}
    </div>
  );
}
