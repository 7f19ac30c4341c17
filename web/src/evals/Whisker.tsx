// One interval drawn as a whisker: a line from its low to its high bound, capped, with a dot at
// the value. Plain SVG (no chart library): x positions are percentages of the track, and the
// exact bounds ride along as data attributes so a test can hold the picture to the API's numbers.
import type { OutcomeKind } from "../api/client";
import type { Interval } from "./summary";

export type WhiskerTone = OutcomeKind | "neutral";

/** Where `value` falls on `domain`, as a percentage (clamped to the track). */
export function position(value: number, [low, high]: [number, number]): number {
  const at = ((value - low) / (high - low)) * 100;
  return Math.min(100, Math.max(0, at));
}

export function Whisker({
  interval,
  domain = [0, 1],
  tone,
  name,
}: {
  interval: Interval;
  domain?: [number, number];
  tone: WhiskerTone;
  /** What the interval is of (an outcome's name, "return"...): the data-name attribute. */
  name: string;
}) {
  const x1 = position(interval.low, domain);
  const x2 = position(interval.high, domain);
  const at = position(interval.value, domain);
  // The text columns beside the whisker say the same numbers: the picture is hidden from
  // assistive technology rather than said twice.
  return (
    <svg
      className={`whisker whisker-${tone}`}
      aria-hidden="true"
      focusable="false"
      height="16"
      data-whisker={name}
      data-value={interval.value}
      data-low={interval.low}
      data-high={interval.high}
    >
      <line className="whisker-track" x1="0%" x2="100%" y1="8" y2="8" />
      <line className="whisker-range" x1={`${x1}%`} x2={`${x2}%`} y1="8" y2="8" />
      <line className="whisker-cap" x1={`${x1}%`} x2={`${x1}%`} y1="3" y2="13" />
      <line className="whisker-cap" x1={`${x2}%`} x2={`${x2}%`} y1="3" y2="13" />
      <circle className="whisker-dot" cx={`${at}%`} cy="8" r="4" />
    </svg>
  );
}
