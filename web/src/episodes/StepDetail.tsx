// One step in full: the call, the reward by component, the lies told or settled here, the
// report beside the truth field by field (what changed first, the rest folded), and the world's
// picture as the agent saw it after the call and as it truly was.
import { ErrorNote } from "../components/ErrorNote";
import { Truth } from "../components/Truth";
import { WorldPicture } from "../pictures";
import { showValue, type Fields } from "./fields";
import { formatNumber } from "./format";
import { LieStatus } from "./LiesPanel";
import type { Lie, RecordedEvent, ReplayCheck, TimelineStep } from "./queries";
import { RewardChips } from "./RewardPanel";
import type { StepSummary } from "./steps";

interface Props {
  env: string;
  event: RecordedEvent;
  summary: StepSummary;
  total: number;
  /** Every lie of the episode: the true picture marks those told up to this step. */
  lies: Lie[];
  told: Lie[];
  settled: Lie[];
  difference: ReplayCheck["first_difference"];
  /** The replayed step (the agent's view after it); undefined while it loads. */
  replayed: TimelineStep | undefined;
  replayError: unknown;
}

function FieldTable({ fields, paths, marked, mark, label, empty }: {
  fields: Fields;
  paths: string[];
  marked: Set<string>;
  mark: (path: string) => string;
  label: string;
  empty: string;
}) {
  if (paths.length === 0) return <p className="muted small">{empty}</p>;
  return (
    <div className="ep-fields" role="region" aria-label={label} tabIndex={0}>
      <table>
        <tbody>
          {paths.map((path) => (
            <tr key={path} className={marked.has(path) ? "ep-diff" : undefined} data-path={path}>
              <th scope="row">{path}</th>
              <td>{showValue(fields.get(path))}</td>
              <td className="small">{marked.has(path) ? mark(path) : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function StepDetail({ env, event, summary, total, lies, told, settled, difference, replayed, replayError }: Props) {
  const { report, truth, changed, added, disagree } = summary;
  // The true fields worth a look first: those the call changed, and those the report contradicts.
  const news = new Set([...changed, ...disagree]);
  const truthPaths = [...truth.keys()];
  const same = truthPaths.filter((p) => !news.has(p));
  const rewardTotal = Object.values(event.reward).reduce((a, b) => a + b, 0);
  return (
    <section className="ep-detail" aria-labelledby="step-title" data-testid="step-detail" data-step={event.step}>
      <h2 id="step-title">
        Step {event.step} <span className="muted small">of {total}</span>
      </h2>
      <p>
        <code>{summary.call}</code>
        {event.rejected && <span className="ep-rejected"> · rejected: {event.rejected}</span>}
        <span className="muted small"> · clock {event.clock} · {event.tokens} tokens{event.done ? " · the last step" : ""}</span>
      </p>
      {difference && difference.step === event.step && (
        <p className="error">
          <span aria-hidden="true">✗</span> The replay first differs here, in the field <strong>{difference.field}</strong>: the
          record says one thing, the calls make another.
        </p>
      )}
      {(told.length > 0 || settled.length > 0) && (
        <Truth as="div">
          <ul className="ep-lies small">
            {told.map((lie, i) => (
              <li key={`t${i}`}>
                <span aria-hidden="true">⚑</span> This report lied ({lie.kind}): {lie.detail}. <LieStatus lie={lie} />
                {lie.settled_at !== null && ` at step ${lie.settled_at}`}
              </li>
            ))}
            {settled.map((lie, i) => (
              <li key={`s${i}`}>
                This call <LieStatus lie={lie} /> the lie told {lie.told_at ? `at step ${lie.told_at}` : "before the first call"} ({lie.kind}): {lie.detail}.
              </li>
            ))}
          </ul>
        </Truth>
      )}
      <p className="ep-step-reward">
        Reward <strong>{formatNumber(rewardTotal)}</strong>
      </p>
      <RewardChips rewards={event.reward} label={`Reward by component at step ${event.step}`} />

      <div className="ep-two">
        <div className="ep-side ep-reported">
          <h3>Reported</h3>
          <p className="muted small">What the tool told the agent.</p>
          <FieldTable
            fields={report}
            paths={[...report.keys()]}
            marked={disagree}
            mark={(p) => `≠ true: ${showValue(truth.get(p))}`}
            label={`Reported at step ${event.step}`}
            empty="Nothing was reported."
          />
        </div>
        <Truth as="div" className="ep-side ep-true">
          <h3>True</h3>
          <p className="muted small">
            The hidden state after the call: first what it changed{event.step === 1 ? " (all of it is new at the first step)" : ""}.
          </p>
          <FieldTable
            fields={truth}
            paths={truthPaths.filter((p) => news.has(p))}
            marked={news}
            mark={(p) => (disagree.has(p) ? `≠ reported: ${showValue(report.get(p))}` : added.has(p) ? "new" : "changed")}
            label={`True fields changed or contradicted at step ${event.step}`}
            empty="The call changed nothing."
          />
          {same.length > 0 && (
            <details>
              <summary>{same.length} unchanged</summary>
              <FieldTable fields={truth} paths={same} marked={new Set()} mark={() => ""} label={`True fields unchanged at step ${event.step}`} empty="" />
            </details>
          )}
        </Truth>
      </div>

      <h3>The world at step {event.step}</h3>
      <p className="muted small">As the agent saw it after the call (replayed), and as it truly was.</p>
      {replayError ? (
        <ErrorNote error={replayError} />
      ) : replayed ? (
        <div className="ep-picture" role="region" aria-label={`The world at step ${event.step}`} tabIndex={0}>
          <WorldPicture env={env} observation={replayed.observation} truth={event.truth} lies={lies} />
        </div>
      ) : (
        <p className="muted" aria-busy="true">
          Loading the replayed view…
        </p>
      )}
    </section>
  );
}
