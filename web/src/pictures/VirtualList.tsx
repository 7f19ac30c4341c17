// A long list drawn a window at a time (@tanstack/react-virtual): the fleet's evidence drawer
// holds every log line, watchdog entry and flight-recorder record the agent has read, and only
// the rows in view are in the DOM. Rows may wrap: each is measured once drawn.
import { useVirtualizer } from "@tanstack/react-virtual";
import { useRef } from "react";
import { TONE_ICON, type Tone } from "./common";

export interface Row {
  /** A section's heading row, or a line under it. */
  head?: boolean;
  text: string;
  tone?: Tone;
}

export function VirtualList({ rows, label, testid }: { rows: Row[]; label: string; testid?: string }) {
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 21,
    overscan: 10,
  });
  return (
    // A scrollable region must be reachable by keyboard to be scrolled by it.
    <div ref={scroller} className="pic-virtual" tabIndex={0} role="region" aria-label={label} data-testid={testid}>
      <ul className="pic-virtual-list" style={{ height: virtual.getTotalSize() }} data-rows={rows.length}>
        {virtual.getVirtualItems().map((item) => {
          const row = rows[item.index];
          return (
            <li
              key={item.key}
              ref={virtual.measureElement}
              data-index={item.index}
              aria-setsize={rows.length}
              aria-posinset={item.index + 1}
              className={row.head ? "pic-virtual-head" : row.tone ? `pic-text-${row.tone}` : undefined}
              style={{ transform: `translateY(${item.start}px)` }}
            >
              {row.tone && !row.head && <span aria-hidden="true">{TONE_ICON[row.tone]} </span>}
              {row.text}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
