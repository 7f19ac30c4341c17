// The steps of a played episode: the log (each call, what its tool reported, the reward paid),
// the step looked at with the world's picture after it, and the reward chips. While the episode
// runs all of it is what the agent was told; the lies and the truth join once it has ended,
// each inside <Truth>.
import { Link } from "wouter";
import type { Schemas } from "../../api/client";
import { Truth } from "../../components/Truth";
import { WorldPicture } from "../../pictures";
import type { Observation, Told } from "./session";

type Lie = Schemas["Lie"];

/** ``+0.40``, ``−1.10``: a reward, signed. */
export function signed(x: number): string {
  const abs = Math.abs(x).toFixed(2);
  return x < 0 ? `−${abs}` : x > 0 ? `+${abs}` : abs;
}

/** ``inspect(target="deploy")``: a call as the agent made it. */
export function callText(tool: unknown, args: unknown): string {
  const name = typeof tool === "string" ? tool : JSON.stringify(tool);
  if (typeof args !== "object" || args === null || Array.isArray(args)) return `${name}(${JSON.stringify(args)})`;
  const parts = Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${name}(${parts.join(", ")})`;
}

/** Each component's reward over ``steps`` (what was paid, step by step). */
export function componentTotals(steps: Told[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const s of steps) for (const [k, v] of Object.entries(s.components)) totals[k] = (totals[k] ?? 0) + v;
  return totals;
}

export function RewardChips({ components, label }: { components: Record<string, number>; label: string }) {
  const paid = Object.entries(components);
  if (!paid.length) return <p className="muted small">No reward paid.</p>;
  return (
    <ul className="chips" aria-label={label}>
      {paid.map(([name, value]) => (
        <li key={name} className="chip" data-component={name} data-value={value}>
          {name} <span className="num">{signed(value)}</span>
        </li>
      ))}
    </ul>
  );
}

interface LogProps {
  history: Told[];
  selected: number;
  hrefOf: (step: number) => string;
  /** The lies told, once the episode has ended. */
  lies: Lie[] | undefined;
}

export function StepLog({ history, selected, hrefOf, lies }: LogProps) {
  const entry = (step: number, label: string) => (
    <Link href={hrefOf(step)} aria-current={step === selected ? "step" : undefined}>
      {label}
    </Link>
  );
  return (
    <ol className="step-log">
      <li data-step={0}>
        {entry(0, "Start")}
        <span className="muted small">before the first call</span>
        <span />
        <LieMarks step={0} lies={lies} />
      </li>
      {history.map((s) => (
        <li key={s.step} data-step={s.step}>
          {entry(s.step, `#${s.step} ${callText(s.tool, s.args)}`)}
          {s.rejected ? (
            <span className="rejected small">✗ rejected: {s.rejected}</span>
          ) : (
            <code className="report-line">{JSON.stringify(s.report)}</code>
          )}
          <span className="num">{signed(s.reward)}</span>
          <LieMarks step={s.step} lies={lies} />
        </li>
      ))}
    </ol>
  );
}

/** Where a lie was told, and where a later call trusted or reconciled it. */
function LieMarks({ step, lies }: { step: number; lies: Lie[] | undefined }) {
  const told = (lies ?? []).filter((l) => l.told_at === step);
  const settled = (lies ?? []).filter((l) => l.settled_at === step);
  if (!told.length && !settled.length) return null;
  return (
    <Truth className="lie-marks">
      {told.map((l) => (
        <span key={`t-${l.kind}-${l.told_at}`} className="lie" data-lie-told={l.kind} data-status={l.status}>
          ⚑ lie told: {l.detail} ({l.status}
          {l.settled_at !== null ? ` at step ${l.settled_at}` : ""})
        </span>
      ))}
      {settled.map((l) => (
        <span key={`s-${l.kind}-${l.told_at}`} className="lie" data-lie-settled={l.status}>
          ⚑ {l.status === "reconciled" ? "reconciled" : "trusted"} the lie of step {l.told_at}
        </span>
      ))}
    </Truth>
  );
}

interface DetailProps {
  env: string;
  /** The step looked at (null: the start, before any call). */
  step: Told | null;
  /** What the agent saw after it, if this page saw it. */
  observation: Observation | null;
  /** The truth after it: only once the episode has ended. */
  truth: Observation | null;
  /** The ended episode's lies, for the true picture. */
  lies: Lie[] | null;
}

export function StepDetail({ env, step, observation, truth, lies }: DetailProps) {
  const n = step?.step ?? 0;
  return (
    <section className="play-step" aria-labelledby="step-title">
      <h2 id="step-title">{step ? `Step ${step.step}: ${callText(step.tool, step.args)}` : "The start"}</h2>
      {step && (
        <>
          {step.rejected && <p className="rejected">Rejected: {step.rejected}</p>}
          <h3>What the tool reported</h3>
          <pre className="json">{JSON.stringify(step.report, null, 1)}</pre>
          <h3>Reward paid</h3>
          <RewardChips components={step.components} label={`Reward paid on step ${n}`} />
        </>
      )}
      <h3>{truth ? "The world as reported, and the truth" : "The world as the agent sees it"}</h3>
      <div className="play-picture" data-step={n} data-testid="picture">
        {observation ? (
          <WorldPicture env={env} observation={observation} truth={truth} lies={lies} />
        ) : (
          <p className="muted">
            This page did not see the world after step {n}: a policy played it within one request.
          </p>
        )}
      </div>
    </section>
  );
}
