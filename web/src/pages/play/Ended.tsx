// What an ended episode shows and a running one never does: the verdict, the seed the server
// drew, the family it drew, the lies told and what became of them, the truth at the end, and
// whether the record replays to the same hash chain.
import type { Schemas } from "../../api/client";
import { useOutcomeKind } from "../../api/hooks";
import { ErrorNote, Loading } from "../../components/ErrorNote";
import { Truth } from "../../components/Truth";
import { OutcomeBadge } from "../../outcomes";
import { callText } from "./Steps";
import { useReplayCheck, type View } from "./session";

interface Props {
  view: View;
  record: Schemas["SessionRecord"] | undefined;
  recordError: unknown;
  seedChosen: boolean;
}

export function Ended({ view, record, recordError, seedChosen }: Props) {
  const kind = useOutcomeKind();
  const verdict = view.verdict;
  // Failed invariants first: they are why the verdict is what it is.
  const invariants = [...(verdict?.invariants ?? [])].sort((a, b) => Number(a.held) - Number(b.held));
  const final = record?.record.events.at(-1)?.truth;
  return (
    <section className="play-ended" aria-labelledby="ended-title">
      <h2 id="ended-title">The episode has ended</h2>
      <p className="row">
        <OutcomeBadge outcome={verdict?.outcome ?? null} kind={kind(view.env, verdict?.outcome)} />
        <span>{verdict?.accepted ? "accepted by the judge" : "not accepted by the judge"}</span>
        <span data-testid="seed">
          seed <strong>{view.seed}</strong> {seedChosen ? "(chosen)" : "(drawn by the server)"}
        </span>
        <Truth>
          family <strong data-testid="family">{view.family}</strong>
        </Truth>
      </p>
      <ReplayBadge id={view.id} />

      <h3>Verdict</h3>
      <table className="invariants">
        <thead>
          <tr>
            <th scope="col">Invariant</th>
            <th scope="col">Held</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {invariants.map((inv) => (
            <tr key={inv.name} data-invariant={inv.name} data-held={inv.held}>
              <td>{inv.name}</td>
              <td className={inv.held ? "held" : "failed"}>{inv.held ? "✓ held" : "✗ failed"}</td>
              <td>{inv.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>

      {recordError ? <ErrorNote error={recordError} /> : !record && <Loading what="the record" />}
      {record && (
        <>
          <h3>Lies told</h3>
          <Truth as="div">
            {record.lies.told.length === 0 ? (
              <p className="muted">No report lied in this episode.</p>
            ) : (
              <ul className="lies">
                {record.lies.told.map((l) => (
                  <li key={`${l.kind}-${l.told_at}`} data-lie={l.kind} data-status={l.status}>
                    <strong>{l.kind}</strong>: {l.detail}. Told at step {l.told_at}
                    {l.told_by ? ` by ${l.told_by}` : ""}; <strong>{l.status}</strong>
                    {l.settled_at !== null && ` at step ${l.settled_at}`}
                    {l.settled_by && ` by ${callText(l.settled_by.tool, l.settled_by.args)}`}.
                  </li>
                ))}
              </ul>
            )}
          </Truth>
          <h3>The truth at the end</h3>
          <Truth as="div">
            <pre className="json" data-testid="truth">
              {JSON.stringify(final ?? null, null, 1)}
            </pre>
          </Truth>
        </>
      )}
    </section>
  );
}

/** ✓ when the record's calls replay to the same hash chain; ✗ naming where they first differ. */
function ReplayBadge({ id }: { id: string }) {
  const check = useReplayCheck(id);
  if (check.error) return <ErrorNote error={check.error} />;
  if (!check.data) return <p className="muted small">Replaying the record…</p>;
  const { match, first_difference: diff } = check.data;
  return (
    <p className={`replay ${match ? "replay-ok" : "replay-bad"}`} data-testid="replay" data-match={match}>
      <span aria-hidden="true">{match ? "✓" : "✗"}</span>{" "}
      {match
        ? "Replay verified: the calls, played again, give the same hash chain."
        : `Replay differs at step ${diff?.step}, field ${diff?.field}.`}
    </p>
  );
}
