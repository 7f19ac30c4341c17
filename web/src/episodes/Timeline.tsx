// The timeline: one row per step, "reported" beside "true", virtualised (@tanstack/react-virtual)
// so that a 2,000-step record keeps a few dozen rows in the DOM and scrolls smoothly (Langfuse
// froze on 30k observations until it did the same). It is a listbox: the selected step is its
// active option; ↑/↓, j/k, PageUp/PageDown and Home/End move it while it has focus.
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useRef, type KeyboardEvent } from "react";
import { Truth } from "../components/Truth";
import { formatSigned } from "./format";
import { LIE_STATUS } from "./LiesPanel";
import type { LieMarks, StepSummary } from "./steps";

/** Every row is this tall (CSS keeps its text to one line), so no row is measured. */
const ROW_HEIGHT = 34;
const PAGE = 10;

interface Props {
  total: number;
  summary: (index: number) => StepSummary;
  marks: LieMarks;
  /** The step where the replay first differs from the record, if any. */
  differsAt: number | null;
  selected: number;
  onSelect: (step: number, how: "push" | "replace") => void;
}

export function Timeline({ total, summary, marks, differsAt, selected, onSelect }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: total,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
  });

  // Keep the selected step in view, whatever moved it: a key, a link, back/forward.
  useEffect(() => {
    if (total > 0) virtualizer.scrollToIndex(selected - 1, { align: "auto" });
  }, [selected, total, virtualizer]);

  const keys = (event: KeyboardEvent<HTMLDivElement>) => {
    const moves: Record<string, number> = {
      ArrowDown: selected + 1,
      ArrowUp: selected - 1,
      PageDown: selected + PAGE,
      PageUp: selected - PAGE,
      Home: 1,
      End: total,
    };
    const to = moves[event.key];
    if (to === undefined || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    onSelect(Math.min(Math.max(to, 1), total), "replace");
  };

  const items = virtualizer.getVirtualItems();
  // The active option must be in the DOM: not while the selected step is scrolled far away.
  const shown = items.some((item) => item.index === selected - 1);
  return (
    <div className="ep-timeline-box">
      <div className="ep-step ep-step-head" aria-hidden="true">
        <span>Step</span>
        <span>Call</span>
        <span>Reported</span>
        <span>True (what the call changed)</span>
        <span className="num">Reward</span>
      </div>
      <div
        ref={scroller}
        className="ep-timeline"
        role="listbox"
        aria-label={`Steps, ${total} in all`}
        tabIndex={0}
        aria-activedescendant={shown ? `step-${selected}` : undefined}
        onKeyDown={keys}
        data-testid="timeline"
      >
        <div role="presentation" className="ep-timeline-sizer" style={{ height: virtualizer.getTotalSize() }}>
          {items.map((item) => (
            <StepRow
              key={item.key}
              row={summary(item.index)}
              total={total}
              top={item.start}
              marks={marks}
              differs={differsAt === item.index + 1}
              selected={selected === item.index + 1}
              onSelect={onSelect}
            />
          ))}
        </div>
      </div>
    </div>
  );
}

interface RowProps {
  row: StepSummary;
  total: number;
  top: number;
  marks: LieMarks;
  differs: boolean;
  selected: boolean;
  onSelect: Props["onSelect"];
}

function StepRow({ row, total, top, marks, differs, selected, onSelect }: RowProps) {
  const told = marks.told.get(row.step) ?? [];
  const settled = marks.settled.get(row.step) ?? [];
  const classes = ["ep-step"];
  if (selected) classes.push("ep-step-selected");
  if (told.length || differs) classes.push("ep-step-flag");
  const disagree = row.disagree.size > 0;
  return (
    <div
      role="option"
      id={`step-${row.step}`}
      aria-selected={selected}
      aria-posinset={row.step}
      aria-setsize={total}
      className={classes.join(" ")}
      style={{ transform: `translateY(${top}px)`, height: ROW_HEIGHT }}
      data-step={row.step}
      data-told={told.map((l) => l.kind).join(" ") || undefined}
      data-settled={settled.map((l) => l.status).join(" ") || undefined}
      data-differs={differs || undefined}
      onClick={() => onSelect(row.step, "push")}
    >
      <span className="ep-c-step">
        {row.step}
        {differs && <Mark icon="✗" text="the replay differs here" className="ep-mark-bad" />}
        {told.length > 0 && <Mark icon="⚑" text={`lie told: ${told.map((l) => l.kind).join(", ")}`} className="ep-mark-lie" />}
        {settled.map((lie, i) => (
          <Mark key={i} icon={LIE_STATUS[lie.status].icon} text={`lie ${LIE_STATUS[lie.status].word}: ${lie.kind}`} className={`ep-mark-${lie.status}`} />
        ))}
      </span>
      <span className="ep-c-call">
        {row.rejected && <Mark icon="⊘" text="rejected" className="ep-mark-bad" />}
        {row.call}
      </span>
      <span className={disagree ? "ep-c-rep ep-diff" : "ep-c-rep"}>
        <span className="sr-only">Reported: </span>
        {disagree && <Mark icon="≠" text="differs from the truth" />}
        {row.reportedLine}
      </span>
      <Truth className={disagree ? "ep-c-true ep-diff" : "ep-c-true"}>
        <span className="sr-only">True: </span>
        {row.trueLine}
      </Truth>
      <span className="ep-c-reward num">
        <span className="sr-only">Reward: </span>
        {formatSigned(row.reward)}
      </span>
    </div>
  );
}

/** A mark: its icon for the eye (with the words as a tooltip), its words for a screen reader. */
function Mark({ icon, text, className }: { icon: string; text: string; className?: string }) {
  return (
    <span className={className ? `ep-mark ${className}` : "ep-mark"} title={text}>
      <span aria-hidden="true">{icon}</span>
      <span className="sr-only">{text}</span>
    </span>
  );
}
