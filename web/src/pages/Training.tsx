// Training: the jobs (live ones polled), a form that starts one from its trainer's config schema,
// every stored run, and two runs compared (their curves overlaid, their configs diffed). The
// trainer shown, the runs compared and the curve are in the URL.
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap } from "../api/client";
import { useServer, useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { useSearchParams } from "../evals/searchParams";
import { CompareRuns } from "../training/CompareRuns";
import { JobStatus, LIVE_STATUSES } from "../training/JobStatus";
import { StartJob } from "../training/StartJob";
import "../evals/evals.css";
import "../training/training.css";

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "—");

export default function Training() {
  const [params, setParams] = useSearchParams();
  const server = useServer();
  const worlds = useWorlds();
  const kinds = useQuery({
    queryKey: ["training", "kinds"],
    queryFn: async () => unwrap(await api.GET("/api/training")),
    staleTime: 60_000,
  });
  const jobs = useQuery({
    queryKey: ["training", "jobs"],
    queryFn: async () => unwrap(await api.GET("/api/training/jobs")),
    refetchInterval: (query) => (query.state.data?.some((j) => LIVE_STATUSES.includes(j.status)) ? 2000 : false),
  });
  const runs = useQuery({
    queryKey: ["training", "runs"],
    queryFn: async () => unwrap(await api.GET("/api/training/runs")),
  });

  const compared = (params.get("compare") ?? "").split(",").filter(Boolean);
  const toggle = (name: string) => {
    const next = compared.includes(name) ? compared.filter((n) => n !== name) : [...compared, name].slice(-2);
    setParams({ compare: next.join(",") });
  };

  return (
    <section>
      <h1>Training</h1>
      {server.data && !server.data.training && (
        <p className="note">Training jobs over HTTP are off on this server; the stored runs are shown.</p>
      )}

      <h2>Jobs</h2>
      {jobs.isPending && <Loading what="the jobs" />}
      <ErrorNote error={jobs.error} />
      {jobs.data && jobs.data.length === 0 && <p className="muted">No training job yet.</p>}
      {jobs.data && jobs.data.length > 0 && (
        <div className="scroll-box" tabIndex={0} role="region" aria-label="Training jobs">
          <table data-testid="jobs">
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Trainer</th>
                <th scope="col">World</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col">Finished</th>
              </tr>
            </thead>
            <tbody>
              {jobs.data.map((j) => (
                <tr key={j.name} data-job={j.name}>
                  <td>
                    <Link href={`/training/${encodeURIComponent(j.name)}`}>{j.name}</Link>
                  </td>
                  <td>{j.kind}</td>
                  <td>{j.env}</td>
                  <td>
                    <JobStatus status={j.status} />
                  </td>
                  <td className="small">{when(j.started_at)}</td>
                  <td className="small">{when(j.finished_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      {kinds.isPending && <Loading what="the trainers" />}
      <ErrorNote error={kinds.error} />
      {kinds.data?.enabled && worlds.data && (
        <StartJob
          kinds={kinds.data.kinds}
          kind={params.get("kind") ?? "ppo"}
          setKind={(kind) => setParams({ kind }, { replace: true })}
          worlds={worlds.data}
          runs={runs.data ?? []}
          maxWall={kinds.data.max_wall_s}
        />
      )}

      <h2>Runs</h2>
      <p className="small muted">Every training run in the store (the CLI&apos;s too). Tick two to compare them.</p>
      {runs.isPending && <Loading what="the runs" />}
      <ErrorNote error={runs.error} />
      {runs.data && runs.data.length === 0 && <p className="muted">The store holds no training run yet.</p>}
      {runs.data && runs.data.length > 0 && (
        <div className="scroll-box" tabIndex={0} role="region" aria-label="Training runs">
          <table data-testid="runs">
            <thead>
              <tr>
                <th scope="col">Compare</th>
                <th scope="col">Run</th>
                <th scope="col">Trainer</th>
                <th scope="col">World</th>
                <th scope="col">Status</th>
                <th scope="col" className="num">
                  Curves
                </th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.map((r) => (
                <tr key={r.name} data-run={r.name}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Compare ${r.name}`}
                      checked={compared.includes(r.name)}
                      onChange={() => toggle(r.name)}
                    />
                  </td>
                  <td>{r.job ? <Link href={`/training/${encodeURIComponent(r.name)}`}>{r.name}</Link> : r.name}</td>
                  <td>{r.kind}</td>
                  <td>{r.env}</td>
                  <td>{r.status}</td>
                  <td className="num">{r.curves.length}</td>
                  <td className="small">{when(r.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {compared.length === 2 && <CompareRuns names={[compared[0], compared[1]]} params={params} setParams={setParams} />}
      {compared.length === 1 && <p className="muted">Tick one more run to compare it with {compared[0]}.</p>}
    </section>
  );
}
