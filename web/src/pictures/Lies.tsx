// The lies told to the agent up to the step drawn, for the true side of a picture: each world
// marks a misleading report in that step's truth (``truth.lies``), and an ended episode's record
// says what became of each (trusted, reconciled, or still open). Only ever drawn inside <Truth>.
import { TONE_ICON, type Lie, type Tone } from "./common";

/** A lie as the truth of the step that told it holds it. */
export interface StepLie {
  kind: string;
  step: number;
  detail: string;
}

const SETTLED: Record<Lie["status"], [Tone, string]> = {
  trusted: ["bad", "trusted"],
  reconciled: ["ok", "reconciled"],
  open: ["unknown", "open"],
};

/** Every lie told by ``step`` (the whole ledger when it is known, else this step's), with how it
 * stood at that step: a lie settled later is still open here. */
export function liesBy(lies: Lie[] | null | undefined, atStep: StepLie[] | undefined, step: number | undefined): Lie[] {
  if (lies) {
    const now = step ?? Infinity;
    return lies
      .filter((lie) => lie.told_at <= now)
      .map((lie) =>
        lie.settled_at != null && lie.settled_at <= now
          ? lie
          : { ...lie, status: "open", settled_at: null, settled_by: null },
      );
  }
  return (atStep ?? []).map((lie) => ({
    kind: lie.kind,
    detail: lie.detail,
    told_at: lie.step,
    told_by: null,
    status: "open",
    settled_at: null,
    settled_by: null,
  }));
}

export function LiesTold({ lies, atStep, step }: { lies?: Lie[] | null; atStep?: StepLie[]; step?: number }) {
  const told = liesBy(lies, atStep, step);
  return (
    <div className="pic-lies" data-testid="lies">
      <p className="pic-side-title">
        Lies told{lies ? "" : " at this step"}: {told.length}
      </p>
      {told.length > 0 && (
        <ul>
          {told.map((lie, i) => {
            const [tone, word] = SETTLED[lie.status];
            return (
              <li key={i} data-testid="lie" data-kind={lie.kind} data-status={lie.status}>
                <span className={`pic-chip pic-tone-${tone}`}>
                  <span aria-hidden="true">{TONE_ICON[tone]}</span> {word}
                </span>{" "}
                <strong>{lie.kind.replaceAll("_", " ")}</strong> (step {lie.told_at}): {lie.detail}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
