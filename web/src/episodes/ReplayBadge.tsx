// Whether the stored record is what its calls make again: ✓ when the replay matches, ✗ naming
// the first step and field that differ (a record edited after the fact), and beside it, both
// values: what the record says and what the replay made.
import { Link } from "wouter";
import { ErrorNote } from "../components/ErrorNote";
import type { ReplayCheck } from "./queries";

export function ReplayBadge({ check, error }: { check: ReplayCheck | undefined; error: unknown }) {
  if (error) return <ErrorNote error={error} />;
  if (!check) {
    return (
      <span className="ep-replay ep-replay-pending" aria-busy="true">
        Replaying…
      </span>
    );
  }
  if (check.match) {
    const labels = check.labels ?? [];
    return (
      <span className="ep-replay ep-replay-ok" data-testid="replay" data-match="true">
        <span aria-hidden="true">✓</span> Replay verified
        {labels.length > 0 && <span className="small"> · not admissible: {labels.join(", ")}</span>}
      </span>
    );
  }
  const diff = check.first_difference;
  return (
    <span className="ep-replay ep-replay-bad" data-testid="replay" data-match="false" data-step={diff?.step} data-field={diff?.field}>
      <span aria-hidden="true">✗</span> Replay differs
      {diff && (diff.step === 0 ? <> in the record&apos;s {diff.field}</> : <> at step {diff.step}, field {diff.field}</>)}
    </span>
  );
}

export function ReplayDifference({ difference, base }: { difference: NonNullable<ReplayCheck["first_difference"]>; base: string }) {
  return (
    <details className="ep-replay-diff">
      <summary>What the record says, and what its calls make again</summary>
      {difference.step > 0 && (
        <p className="small">
          <Link href={`${base}?step=${difference.step}`}>Go to step {difference.step}</Link>
        </p>
      )}
      <div className="ep-two">
        <div>
          <p className="ep-side-title">Recorded {difference.field}</p>
          <pre className="ep-json" tabIndex={0}>
            {JSON.stringify(difference.recorded, null, 1)}
          </pre>
        </div>
        <div>
          <p className="ep-side-title">Replayed {difference.field}</p>
          <pre className="ep-json" tabIndex={0}>
            {JSON.stringify(difference.replayed, null, 1)}
          </pre>
        </div>
      </div>
    </details>
  );
}
