// One policy on one scenario: every outcome's rate with its Wilson interval (never one blended
// success rate), the return with its interval, pass^k and pass@k, and the lies told and trusted.
import type { ReactNode } from "react";
import type { OutcomeKind } from "../api/client";
import { OutcomeBadge } from "../outcomes";
import { percent, type Interval, type PolicySummary } from "./summary";
import { Whisker, type WhiskerTone } from "./Whisker";

function Row({
  label,
  interval,
  tone,
  name,
  domain,
  format,
}: {
  label: ReactNode;
  interval: Interval;
  tone: WhiskerTone;
  name: string;
  domain?: [number, number];
  format: (n: number) => string;
}) {
  return (
    <tr data-row={name}>
      <th scope="row">{label}</th>
      <td className="num">{format(interval.value)}</td>
      <td className="num interval">
        {format(interval.low)} – {format(interval.high)}
      </td>
      <td className="whisker-cell">
        <Whisker interval={interval} domain={domain} tone={tone} name={name} />
      </td>
    </tr>
  );
}

const fixed2 = (n: number) => n.toFixed(2);

export function SummaryCard({
  summary,
  env,
  kind,
  returnDomain,
}: {
  summary: PolicySummary;
  env: string;
  kind: (env: string, outcome: string) => OutcomeKind;
  /** One scale for every card's return, so that the whiskers compare across policies. */
  returnDomain: [number, number];
}) {
  const id = `summary-${summary.policy}-${summary.scenario}`.replace(/[^\w-]/g, "_");
  const ks = Object.keys(summary.pass_hat_k).sort((a, b) => Number(a) - Number(b));
  const lies = summary.lies;
  return (
    <article className="card eval-card" aria-labelledby={id} data-policy={summary.policy} data-scenario={summary.scenario}>
      <h3 id={id}>
        {summary.policy} <span className="muted">on {summary.scenario}</span>
      </h3>
      <p className="small muted">
        {summary.n} episodes on {summary.seeds} seeds · {summary.steps.toFixed(1)} steps on average
        {summary.tokens > 0 && ` · ${summary.tokens.toFixed(0)} tokens`}
        {summary.downtime_cost != null && ` · downtime cost ${summary.downtime_cost.toFixed(0)}`}
      </p>
      <table className="whiskers">
        <caption className="sr-only">
          {summary.policy} on {summary.scenario}: each outcome&apos;s rate with its 95% Wilson interval
        </caption>
        <thead>
          <tr>
            <th scope="col">Outcome</th>
            <th scope="col" className="num">
              Rate
            </th>
            <th scope="col" className="num">
              95% interval
            </th>
            <th scope="col" className="whisker-cell">
              <span className="axis">
                <span>0</span>
                <span>50%</span>
                <span>100%</span>
              </span>
            </th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(summary.outcomes).map(([outcome, interval]) => (
            <Row
              key={outcome}
              name={outcome}
              label={<OutcomeBadge outcome={outcome} kind={kind(env, outcome)} />}
              interval={interval}
              tone={kind(env, outcome)}
              format={percent}
            />
          ))}
        </tbody>
        <tbody className="measures">
          <Row name="return" label="Return" interval={summary.return} tone="neutral" domain={returnDomain} format={fixed2} />
          {lies && (
            <Row name="trusted_share" label="Lies trusted" interval={lies.trusted_share} tone="neutral" format={percent} />
          )}
        </tbody>
      </table>
      <dl className="facts">
        {ks.map((k) => (
          <div key={k} data-fact={`pass_hat_${k}`}>
            <dt>
              pass^{k}
              {summary.deterministic && k !== "1" ? " (deterministic)" : ""}
            </dt>
            <dd>{percent(summary.pass_hat_k[k])}</dd>
          </div>
        ))}
        {ks.length > 1 &&
          ks.map((k) => (
            <div key={`at-${k}`}>
              <dt>pass@{k}</dt>
              <dd>{percent(summary.pass_at_k[k])}</dd>
            </div>
          ))}
        <div data-fact="lies">
          <dt>Lies per episode</dt>
          <dd>{lies ? `${lies.told.toFixed(2)} told, ${lies.trusted.toFixed(2)} trusted` : "not counted"}</dd>
        </div>
      </dl>
      {lies && Object.keys(lies.by_kind).length > 0 && (
        <details>
          <summary>Lies by kind</summary>
          <table className="small">
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col" className="num">
                  Told
                </th>
                <th scope="col" className="num">
                  Trusted
                </th>
                <th scope="col" className="num">
                  Reconciled
                </th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(lies.by_kind).map(([name, c]) => (
                <tr key={name}>
                  <td>{name.replaceAll("_", " ")}</td>
                  <td className="num">{c.told}</td>
                  <td className="num">{c.trusted}</td>
                  <td className="num">{c.reconciled}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </article>
  );
}
