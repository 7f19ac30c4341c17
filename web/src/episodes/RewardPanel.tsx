// The reward by component over the whole episode, as the record totals it, and the return.
// Each chip carries its exact value (data-value) so that a test can add them up.
import { formatNumber, formatSigned } from "./format";

export function RewardChips({ rewards, label }: { rewards: Record<string, number>; label: string }) {
  const entries = Object.entries(rewards);
  if (entries.length === 0) return <p className="muted small">No reward paid.</p>;
  return (
    <ul className="ep-chips" aria-label={label}>
      {entries.map(([name, value]) => (
        <li
          key={name}
          className={value > 0 ? "ep-chip ep-chip-plus" : value < 0 ? "ep-chip ep-chip-minus" : "ep-chip ep-chip-zero"}
          data-component={name}
          data-value={value}
        >
          {name} <strong>{formatSigned(value)}</strong>
        </li>
      ))}
    </ul>
  );
}

export function RewardPanel({ rewards, total }: { rewards: Record<string, number>; total: number }) {
  return (
    <section className="card ep-card" aria-labelledby="reward-title" data-testid="reward">
      <h2 id="reward-title">Reward</h2>
      <p>
        Return <strong data-testid="return" data-value={total}>{formatNumber(total)}</strong>
        <span className="muted small"> · the sum of its components:</span>
      </p>
      <RewardChips rewards={rewards} label="Reward by component, whole episode" />
    </section>
  );
}
