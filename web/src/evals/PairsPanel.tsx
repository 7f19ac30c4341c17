// Two policies on the same seeds: how many pairs both, only A, only B or neither met the
// criterion, the exact McNemar p-value, and every pair's two episodes. The choices (a, b, versus,
// criterion, cell) live in the query string.
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap, type OutcomeKind, type Schemas } from "../api/client";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { OutcomeBadge, outcomeLabel } from "../outcomes";
import { Labelled } from "./Labelled";
import type { SetParams } from "./searchParams";
import { configOf, type EvaluationBrief } from "./summary";

type Comparison = Schemas["Comparison"];
type Cell = Schemas["PairRow"]["cell"];

const CELLS: [Cell, string][] = [
  ["both", "both met it"],
  ["only_a", "only A met it"],
  ["only_b", "only B met it"],
  ["neither", "neither met it"],
];

export function PairsPanel({
  name,
  env,
  outcomes,
  policies,
  evaluations,
  params,
  setParams,
  kind,
}: {
  name: string;
  env: string;
  /** The world's outcomes (each may be the criterion). */
  outcomes: string[];
  /** This evaluation's policies. */
  policies: string[];
  /** Every stored evaluation (side B may come from another of the same world). */
  evaluations: EvaluationBrief[];
  params: URLSearchParams;
  setParams: SetParams;
  kind: (env: string, outcome: string | null) => OutcomeKind;
}) {
  const versus = params.get("versus") ?? "";
  const sideB = versus ? evaluations.find((e) => e.name === versus) : undefined;
  const bPolicies = versus ? (configOf(sideB ?? {})?.policies ?? []) : policies;
  const a = params.get("a") ?? policies[0] ?? "";
  const b = params.get("b") ?? (versus ? bPolicies[0] : policies.find((p) => p !== a)) ?? "";
  const criterion = params.get("criterion") ?? "safe";
  const cell = (params.get("cell") ?? "") as Cell | "";
  const ready = Boolean(a && b && (versus || a !== b));
  const others = evaluations.filter((e) => e.name !== name && configOf(e)?.env === env);

  const pairs = useQuery({
    queryKey: ["pairs", name, a, b, versus, criterion],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/evaluations/{name}/pairs", {
          params: { path: { name }, query: { a, b, criterion, versus: versus || undefined } },
        }),
      ),
    enabled: ready,
  });

  return (
    <section aria-labelledby="pairs-title">
      <h2 id="pairs-title">Paired comparison</h2>
      <p className="small muted">
        Policy A and policy B on the same seeds (scenario, seed and trial): where they differ, and whether the difference is
        more than chance (exact McNemar test).
      </p>
      <div className="row form-row">
        <Labelled label="Policy A">
          {(id) => (
            <select id={id} value={a} onChange={(e) => setParams({ a: e.target.value })}>
              {policies.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="B from evaluation">
          {(id) => (
            <select id={id} value={versus} onChange={(e) => setParams({ versus: e.target.value, b: null })}>
              <option value="">this one ({name})</option>
              {others.map((e) => (
                <option key={e.name} value={e.name}>
                  {e.name}
                </option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Policy B">
          {(id) => (
            <select id={id} value={b} onChange={(e) => setParams({ b: e.target.value })}>
              {bPolicies.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Counts as met">
          {(id) => (
            <select id={id} value={criterion} onChange={(e) => setParams({ criterion: e.target.value })}>
              {["safe", "accepted", ...outcomes].map((o) => (
                <option key={o} value={o}>
                  {criterionWords(o)}
                </option>
              ))}
            </select>
          )}
        </Labelled>
      </div>
      {!ready && <p className="muted">Choose two different policies.</p>}
      {ready && pairs.isPending && <Loading what="the pairs" />}
      <ErrorNote error={pairs.error} />
      {pairs.data && <PairsTable data={pairs.data} cell={cell} setParams={setParams} env={env} kind={kind} />}
    </section>
  );
}

function PairsTable({
  data,
  cell,
  setParams,
  env,
  kind,
}: {
  data: Comparison;
  cell: Cell | "";
  setParams: SetParams;
  env: string;
  kind: (env: string, outcome: string | null) => OutcomeKind;
}) {
  const { counts } = data;
  const rows = cell ? data.rows.filter((r) => r.cell === cell) : data.rows;
  const a = String(data.a.policy);
  const b = String(data.b.policy);
  return (
    <>
      <table className="pairs-counts" data-testid="pair-counts">
        <caption>
          {data.pairs} pairs; met means {criterionWords(data.criterion)}
        </caption>
        <thead>
          <tr>
            <td />
            <th scope="col">B ({b}) met</th>
            <th scope="col">B ({b}) did not</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">A ({a}) met</th>
            <td className="num" data-cell="both">
              {counts.both}
            </td>
            <td className="num" data-cell="only_a">
              {counts.only_a}
            </td>
          </tr>
          <tr>
            <th scope="row">A ({a}) did not</th>
            <td className="num" data-cell="only_b">
              {counts.only_b}
            </td>
            <td className="num" data-cell="neither">
              {counts.neither}
            </td>
          </tr>
        </tbody>
      </table>
      <p data-testid="mcnemar">
        McNemar exact p = <strong data-p={data.p_value}>{formatP(data.p_value)}</strong>
        <span className="muted small">
          {" "}
          (the chance of a split between “only A” and “only B” at least this uneven if the two policies were equally good)
        </span>
        {(data.unpaired.a > 0 || data.unpaired.b > 0) && (
          <span className="small">
            {" "}
            · unpaired: {data.unpaired.a} episodes of A, {data.unpaired.b} of B
          </span>
        )}
      </p>
      <Labelled label="Show pairs">
        {(id) => (
          <select id={id} value={cell} onChange={(e) => setParams({ cell: e.target.value })}>
            <option value="">all ({data.rows.length})</option>
            {CELLS.map(([value, words]) => (
              <option key={value} value={value}>
                {words} ({counts[value]})
              </option>
            ))}
          </select>
        )}
      </Labelled>
      <div className="scroll-box" tabIndex={0} role="region" aria-label="The pairs">
        <table className="pairs-rows">
          <thead>
            <tr>
              <th scope="col">Scenario</th>
              <th scope="col" className="num">
                Seed
              </th>
              <th scope="col" className="num">
                Trial
              </th>
              <th scope="col">Met by</th>
              <th scope="col">A: {a}</th>
              <th scope="col">B: {b}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={`${r.scenario}-${r.seed}-${r.trial}`} data-pair-cell={r.cell}>
                <td>{r.scenario}</td>
                <td className="num">{r.seed}</td>
                <td className="num">{r.trial}</td>
                <td>{CELLS.find(([value]) => value === r.cell)?.[1]}</td>
                <td>
                  <Link href={`/episodes/${r.a.id}`} data-side="a">
                    #{r.a.id}
                  </Link>{" "}
                  <OutcomeBadge outcome={r.a.outcome} kind={kind(env, r.a.outcome)} />
                </td>
                <td>
                  <Link href={`/episodes/${r.b.id}`} data-side="b">
                    #{r.b.id}
                  </Link>{" "}
                  <OutcomeBadge outcome={r.b.outcome} kind={kind(env, r.b.outcome)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** What meeting a criterion means, in words. */
function criterionWords(criterion: string): string {
  if (criterion === "safe") return "a safe outcome";
  if (criterion === "accepted") return "accepted by the judge";
  return `ended “${outcomeLabel(criterion)}”`;
}

/** A p-value said plainly: three significant digits, or "< 0.0001". */
export function formatP(p: number): string {
  if (p < 1e-4) return "< 0.0001";
  return p.toPrecision(3);
}
