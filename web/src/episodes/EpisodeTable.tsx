// One page of stored episodes: each row links to its viewer.
import { Link } from "wouter";
import { useOutcomeKind } from "../api/hooks";
import { OutcomeBadge } from "../outcomes";
import { formatNumber, formatWhen } from "./format";
import type { EpisodeRow } from "./queries";

function Lies({ lies }: { lies: EpisodeRow["lies"] }) {
  if (!lies) return <span className="muted">—</span>;
  if (lies.told === 0) return <span className="muted">none</span>;
  const fates = [
    lies.trusted ? `${lies.trusted} trusted` : "",
    lies.reconciled ? `${lies.reconciled} reconciled` : "",
  ].filter(Boolean);
  return (
    <span>
      {lies.told} told{fates.length > 0 && `: ${fates.join(", ")}`}
    </span>
  );
}

export function EpisodeTable({ rows, caption }: { rows: EpisodeRow[]; caption: string }) {
  const kind = useOutcomeKind();
  return (
    <div className="ep-scroll" tabIndex={0} role="region" aria-label="Episodes table">
      <table className="ep-table">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Episode</th>
            <th scope="col">World</th>
            <th scope="col">Scenario → family</th>
            <th scope="col">Policy</th>
            <th scope="col" className="num">Seed</th>
            <th scope="col">Outcome</th>
            <th scope="col" className="num">Return</th>
            <th scope="col" className="num">Steps</th>
            <th scope="col">Lies</th>
            <th scope="col">Evaluation</th>
            <th scope="col">Stored</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={e.id} data-episode={e.id}>
              <td>
                <Link href={`/episodes/${e.id}`}>#{e.id}</Link>
              </td>
              <td>{e.env}</td>
              <td>{e.scenario === e.family ? e.scenario : `${e.scenario} → ${e.family}`}</td>
              <td>{e.policy}</td>
              <td className="num">
                {e.seed} <span className="muted small">{e.split}</span>
              </td>
              <td>
                <OutcomeBadge outcome={e.outcome} kind={kind(e.env, e.outcome)} />
              </td>
              <td className="num">{formatNumber(e.return)}</td>
              <td className="num">{e.steps}</td>
              <td className="small">
                <Lies lies={e.lies} />
              </td>
              <td>{e.evaluation ?? <span className="muted">—</span>}</td>
              <td className="small muted">{formatWhen(e.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
