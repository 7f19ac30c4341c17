// One outcome palette everywhere, meaning before decoration: safe outcomes calm, harmful ones
// red, unfinished grey, each with its own icon and label (colour is never the only sign). The
// server says what each outcome means (EnvInfo.outcome_kinds), the same rule `opsgym eval`'s
// PNG charts follow.
import type { OutcomeKind } from "./api/client";

export const KIND_ICON: Record<OutcomeKind, string> = { safe: "✓", harmful: "✗", unfinished: "…" };
export const KIND_WORD: Record<OutcomeKind, string> = {
  safe: "safe",
  harmful: "harm",
  unfinished: "unfinished",
};

/** Human words for an outcome: ``rolled_back_verified`` → "rolled back, verified". */
export function outcomeLabel(outcome: string): string {
  const special: Record<string, string> = {
    deployed_verified: "Deployed v2 · verified",
    rolled_back_verified: "Safe rollback · v1 restored",
  };
  return special[outcome] ?? outcome.replaceAll("_", " ");
}

export function OutcomeBadge({ outcome, kind }: { outcome: string | null; kind?: OutcomeKind }) {
  if (outcome == null) {
    return (
      <span className="outcome outcome-unfinished" data-outcome="none">
        <span aria-hidden="true">{KIND_ICON.unfinished}</span> not ended
      </span>
    );
  }
  const k: OutcomeKind = kind ?? "unfinished";
  return (
    <span className={`outcome outcome-${k}`} data-outcome={outcome} data-kind={k} title={KIND_WORD[k]}>
      <span aria-hidden="true">{KIND_ICON[k]}</span> {outcomeLabel(outcome)}
    </span>
  );
}
