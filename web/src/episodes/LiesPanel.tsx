// Every lie the world told the agent, where it was told, and whether the agent trusted it
// (acted on it) or reconciled it (checked it against an authoritative source), at which step
// and by which call. Derived by the server's replay; drawn from the truth, so inside <Truth>.
import { Link } from "wouter";
import { Truth } from "../components/Truth";
import { formatCall } from "./format";
import type { Lie } from "./queries";

export const LIE_STATUS: Record<Lie["status"], { icon: string; word: string }> = {
  trusted: { icon: "⚠", word: "trusted" },
  reconciled: { icon: "✓", word: "reconciled" },
  open: { icon: "…", word: "never settled" },
};

function StepLink({ base, step }: { base: string; step: number }) {
  return <Link href={`${base}?step=${step}`}>step {step}</Link>;
}

export function LieStatus({ lie }: { lie: Lie }) {
  const { icon, word } = LIE_STATUS[lie.status];
  return (
    <span className={`ep-lie-status ep-lie-${lie.status}`}>
      <span aria-hidden="true">{icon}</span> {word}
    </span>
  );
}

export function LiesPanel({ lies, base }: { lies: Lie[]; base: string }) {
  return (
    <section className="card ep-card" aria-labelledby="lies-title" data-testid="lies">
      <h2 id="lies-title">Lies told</h2>
      {lies.length === 0 ? (
        <p className="muted">The world told no lie in this episode.</p>
      ) : (
        <Truth as="div">
          <ol className="ep-lies">
            {lies.map((lie, i) => (
              <li key={i} data-lie={lie.kind} data-status={lie.status}>
                <strong>{lie.kind.replaceAll("_", " ")}</strong> <LieStatus lie={lie} />
                <div className="small">{lie.detail}</div>
                <div className="small muted">
                  Told{" "}
                  {lie.told_at === 0 ? (
                    "before the first call"
                  ) : (
                    <>
                      at <StepLink base={base} step={lie.told_at} /> by {lie.told_by}
                    </>
                  )}
                  {lie.settled_at !== null && (
                    <>
                      ; {LIE_STATUS[lie.status].word} at <StepLink base={base} step={lie.settled_at} />
                      {lie.settled_by && <> by <code>{formatCall(lie.settled_by.tool, lie.settled_by.args)}</code></>}
                    </>
                  )}
                  .
                </div>
              </li>
            ))}
          </ol>
        </Truth>
      )}
    </section>
  );
}
