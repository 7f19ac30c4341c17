// Evaluations: every stored one (filtered by world, in the URL), the running ones' progress,
// and a form that starts a small one here.
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap } from "../api/client";
import { useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { JobProgress } from "../evals/JobProgress";
import { Labelled } from "../evals/Labelled";
import { NewEvaluation } from "../evals/NewEvaluation";
import { useSearchParams } from "../evals/searchParams";
import { configOf, LIVE_JOB } from "../evals/summary";
import "../evals/evals.css";

export default function Evaluations() {
  const [params, setParams] = useSearchParams();
  const worlds = useWorlds();
  const env = params.get("env") ?? "";
  const list = useQuery({
    queryKey: ["evaluations"],
    queryFn: async () => unwrap(await api.GET("/api/evaluations")),
    refetchInterval: (query) => (query.state.data?.some((e) => e.job && LIVE_JOB.includes(e.job.status)) ? 1000 : false),
  });
  const shown = (list.data ?? []).filter((e) => !env || configOf(e)?.env === env);

  return (
    <section>
      <h1>Evaluations</h1>
      <div className="row">
        <Labelled label="Show evaluations of">
          {(id) => (
            <select id={id} value={env} onChange={(e) => setParams({ env: e.target.value })}>
              <option value="">every world</option>
              {(worlds.data ?? []).map((w) => (
                <option key={w.name}>{w.name}</option>
              ))}
            </select>
          )}
        </Labelled>
      </div>
      {list.isPending && <Loading what="the evaluations" />}
      <ErrorNote error={list.error} />
      {list.data && shown.length === 0 && <p className="muted">The store holds no evaluation{env && ` of ${env}`} yet.</p>}
      {shown.length > 0 && (
        <div className="scroll-box wide" tabIndex={0} role="region" aria-label="Stored evaluations">
          <table data-testid="evaluations">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">World</th>
                <th scope="col">Policies</th>
                <th scope="col">Scenarios</th>
                <th scope="col">Split, seeds</th>
                <th scope="col" className="num">
                  Episodes
                </th>
                <th scope="col">Status</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => {
                const c = configOf(e);
                return (
                  <tr key={e.name} data-evaluation={e.name}>
                    <td>
                      <Link href={`/evaluations/${encodeURIComponent(e.name)}`}>{e.name}</Link>
                    </td>
                    <td>{c?.env}</td>
                    <td>{c?.policies.join(", ")}</td>
                    <td>{c?.scenarios.join(", ")}</td>
                    <td>
                      {c?.split}, {c?.seeds ?? "sealed"}
                    </td>
                    <td className="num">{e.episodes}</td>
                    <td>{e.job && LIVE_JOB.includes(e.job.status) ? <JobProgress job={e.job} /> : e.status}</td>
                    <td className="small">{new Date(e.updated_at).toLocaleString()}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {worlds.data && <NewEvaluation worlds={worlds.data} />}
    </section>
  );
}
