// One evaluation: per policy × scenario every outcome's rate with its Wilson interval, pass^k,
// the return and the lies; two policies compared on the same seeds; a replay verification.
// A job started here is followed until it ends (the query polls while it runs).
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap } from "../api/client";
import { useOutcomeKind, useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { JobProgress } from "../evals/JobProgress";
import { PairsPanel } from "../evals/PairsPanel";
import { useSearchParams } from "../evals/searchParams";
import { SummaryCard } from "../evals/SummaryCard";
import { configOf, LIVE_JOB, span, summaryOf, type Evaluation } from "../evals/summary";
import { VerifyPanel } from "../evals/VerifyPanel";
import "../evals/evals.css";

const jobLive = (e: Evaluation | undefined) => Boolean(e?.job && LIVE_JOB.includes(e.job.status));
const verifying = (e: Evaluation | undefined) => Boolean(e?.verify && LIVE_JOB.includes(e.verify.status));

/** How often to ask again: often while a job started here plays or verifies, now and then while
 * the store says another process (`opsgym eval`) is still writing it, else never. */
function pollEvery(e: Evaluation | undefined): number | false {
  if (jobLive(e) || verifying(e)) return 1000;
  return e?.status === "running" ? 5000 : false;
}

export default function EvaluationView({ name }: { name: string }) {
  const [params, setParams] = useSearchParams();
  const kind = useOutcomeKind();
  const worlds = useWorlds();
  const evaluation = useQuery({
    queryKey: ["evaluation", name],
    queryFn: async () => unwrap(await api.GET("/api/evaluations/{name}", { params: { path: { name } } })),
    refetchInterval: (query) => pollEvery(query.state.data),
  });
  const all = useQuery({
    queryKey: ["evaluations"],
    queryFn: async () => unwrap(await api.GET("/api/evaluations")),
  });

  const e = evaluation.data;
  const config = e ? configOf(e) : null;
  const summaries = e ? summaryOf(e) : [];
  const world = worlds.data?.find((w) => w.name === config?.env);
  const returnDomain = span(summaries.map((s) => s.return));
  const running = jobLive(e) || e?.status === "running";

  return (
    <section>
      <p className="small">
        <Link href="/evaluations">← All evaluations</Link>
      </p>
      <h1>{name}</h1>
      {evaluation.isPending && <Loading what="the evaluation" />}
      <ErrorNote error={evaluation.error} />
      {e && (
        <>
          <p className="meta" data-testid="evaluation-status" data-status={e.job?.status ?? e.status}>
            {config && (
              <>
                {config.env} · {config.policies.join(", ")} · {config.scenarios.join(", ")} · {config.split} split,{" "}
                {config.seeds ?? "sealed"} seeds · {config.episodes} episodes × {config.trials} trial
                {config.trials === 1 ? "" : "s"} ·{" "}
              </>
            )}
            <strong>{e.status}</strong>
            {e.episodes != null && ` · ${e.episodes} episodes stored`}
          </p>
          {e.job && jobLive(e) && <JobProgress job={e.job} />}
          {e.job?.status === "failed" && <p className="error">The evaluation failed: {e.job.error}</p>}

          <h2>Outcomes by policy and scenario</h2>
          <p className="small muted">
            Every outcome has its own rate and 95% Wilson interval (whiskers, 0 to 100%). The return&apos;s interval is its
            mean&apos;s, on one scale for every card: {returnDomain[0].toFixed(2)} to {returnDomain[1].toFixed(2)}.
          </p>
          {summaries.length === 0 && <p className="muted">No summary yet{running ? ": the evaluation is playing." : "."}</p>}
          <div className="eval-cards">
            {summaries.map((s) => (
              <SummaryCard
                key={`${s.policy}/${s.scenario}`}
                summary={s}
                env={config?.env ?? ""}
                kind={kind}
                returnDomain={returnDomain}
              />
            ))}
          </div>

          {config && summaries.length > 0 && (
            <PairsPanel
              name={name}
              env={config.env}
              outcomes={world?.outcomes ?? []}
              policies={config.policies}
              evaluations={all.data ?? []}
              params={params}
              setParams={setParams}
              kind={kind}
            />
          )}
          {e.id != null && <VerifyPanel name={name} verify={e.verify} running={running} />}
        </>
      )}
    </section>
  );
}
