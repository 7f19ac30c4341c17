// What the timeline shows of each step, derived from the stored record: the call, the report
// beside the truth it changed, where they disagree, and the marks (lies told and settled, the
// replay's first difference). Summaries are made on demand and kept: a 2,000-step record only
// pays for the rows on screen.
import { changedPaths, disagreements, flatten, summarise, type Fields } from "./fields";
import { formatCall } from "./format";
import type { Lie, RecordedEvent } from "./queries";

export interface StepSummary {
  step: number;
  call: string;
  rejected: string | null;
  report: Fields;
  truth: Fields;
  /** True fields this call changed (all of them at the first step). */
  changed: Set<string>;
  /** Of those, the ones that did not exist before it (the first step's are all new). */
  added: Set<string>;
  /** Fields the report and the truth both name, with different values. */
  disagree: Set<string>;
  /** One line each: the report's fields, and the true fields that changed. */
  reportedLine: string;
  trueLine: string;
  reward: number;
}

/** The step summaries of one record, made the first time each is asked for. */
export function stepSummaries(events: RecordedEvent[]): (index: number) => StepSummary {
  const made = new Map<number, StepSummary>();
  const truths = new Map<number, Fields>();
  const truthAt = (i: number) => {
    let fields = truths.get(i);
    if (!fields) truths.set(i, (fields = flatten(events[i].truth)));
    return fields;
  };
  return (index) => {
    let found = made.get(index);
    if (found) return found;
    const event = events[index];
    const report = flatten(event.report);
    const truth = truthAt(index);
    const before = index > 0 ? truthAt(index - 1) : null;
    const changed = changedPaths(before, truth);
    found = {
      step: event.step,
      call: formatCall(event.tool, event.args),
      rejected: event.rejected,
      report,
      truth,
      changed,
      added: new Set([...changed].filter((path) => !before?.has(path))),
      disagree: disagreements(report, truth),
      reportedLine: summarise(report),
      trueLine: changed.size ? summarise(truth, changed) : "no change",
      reward: Object.values(event.reward).reduce((a, b) => a + b, 0),
    };
    made.set(index, found);
    return found;
  };
}

export interface LieMarks {
  /** Lies told by each step's report (0: before the first call). */
  told: Map<number, Lie[]>;
  /** Lies each step's call trusted or reconciled. */
  settled: Map<number, Lie[]>;
}

export function lieMarks(lies: Lie[]): LieMarks {
  const told = new Map<number, Lie[]>();
  const settled = new Map<number, Lie[]>();
  const add = (map: Map<number, Lie[]>, step: number, lie: Lie) => map.set(step, [...(map.get(step) ?? []), lie]);
  for (const lie of lies) {
    add(told, lie.told_at, lie);
    if (lie.settled_at !== null) add(settled, lie.settled_at, lie);
  }
  return { told, settled };
}

/** A requested step (from the URL) as one of the record's, 1 to `total`; 1 when unreadable. */
export function clampStep(value: string | null, total: number): number {
  const n = Number(value);
  if (!value || !Number.isSafeInteger(n)) return 1;
  return Math.min(Math.max(n, 1), Math.max(total, 1));
}
