// The judge's verdict, invariant by invariant: the failed ones first and open, the passed ones
// folded (as τ²-bench shows its checks). The judge read the hidden truth: all of it is <Truth>.
import { Truth } from "../components/Truth";
import { OutcomeBadge } from "../outcomes";
import type { OutcomeKind } from "../api/client";
import type { Verdict } from "./queries";

const CORE = new Set(["accepted", "outcome", "invariants"]);

export function VerdictPanel({ verdict, kind }: { verdict: Verdict | null; kind: OutcomeKind }) {
  if (!verdict) {
    return (
      <section className="card ep-card" aria-labelledby="verdict-title">
        <h2 id="verdict-title">Verdict</h2>
        <p className="muted">No verdict: the episode was cut short before the judge ruled.</p>
      </section>
    );
  }
  const failed = verdict.invariants.filter((i) => !i.held);
  const passed = verdict.invariants.filter((i) => i.held);
  const extras = Object.entries(verdict).filter(([key]) => !CORE.has(key));
  return (
    <section className="card ep-card" aria-labelledby="verdict-title" data-testid="verdict">
      <h2 id="verdict-title">Verdict</h2>
      <Truth as="div">
        <p>
          <OutcomeBadge outcome={verdict.outcome} kind={kind} />{" "}
          <strong>{verdict.accepted ? "accepted" : "not accepted"}</strong>
          <span className="muted small">
            {" "}
            · {failed.length} of {verdict.invariants.length} invariants failed
          </span>
        </p>
        {failed.length > 0 && (
          <ul className="ep-invariants" aria-label="Failed invariants">
            {failed.map((i) => (
              <li key={i.name} className="ep-failed" data-invariant={i.name} data-held="false">
                <span aria-hidden="true">✗</span> <strong>{i.name}</strong>
                <span className="sr-only"> failed</span>: {i.reason}
              </li>
            ))}
          </ul>
        )}
        {passed.length > 0 && (
          <details className="ep-passed">
            <summary>{passed.length} passed</summary>
            <ul className="ep-invariants" aria-label="Passed invariants">
              {passed.map((i) => (
                <li key={i.name} data-invariant={i.name} data-held="true">
                  <span aria-hidden="true">✓</span> <strong>{i.name}</strong>
                  <span className="sr-only"> held</span>: {i.reason}
                </li>
              ))}
            </ul>
          </details>
        )}
        {extras.length > 0 && (
          <details>
            <summary>More from the judge ({extras.map(([k]) => k).join(", ")})</summary>
            <pre className="ep-json" tabIndex={0}>
              {JSON.stringify(Object.fromEntries(extras), null, 1)}
            </pre>
          </details>
        )}
      </Truth>
    </section>
  );
}
