// One training job: live curves and log (server-sent events), stop, its summary and files
// (downloaded with the token in a header), and an evaluation of its model. The curves shown are
// in the URL (?curves=return,safe).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useLocation } from "wouter";
import { api, unwrap } from "../api/client";
import { useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { useSearchParams } from "../evals/searchParams";
import { ordered } from "../training/chart";
import { Files } from "../training/Files";
import { EvaluateModel } from "../training/EvaluateModel";
import { JobStatus, LIVE_STATUSES } from "../training/JobStatus";
import { LineChart } from "../training/LineChart";
import { LOG_KEPT, useJobStream } from "../training/useJobStream";
import "../evals/evals.css";
import "../training/training.css";

/** Curves shown until the user chooses. */
const SHOWN = 4;

export default function TrainingView({ name }: { name: string }) {
  const stream = useJobStream(name);
  const worlds = useWorlds();
  const [params, setParams] = useSearchParams();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const job = stream.job;
  const live = job != null && LIVE_STATUSES.includes(job.status);
  const over = job != null && !live;

  const summary = useQuery({
    queryKey: ["training", "summary", name],
    queryFn: async () => unwrap(await api.GET("/api/training/jobs/{name}/summary", { params: { path: { name } } })),
    enabled: over,
  });
  const stop = useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/training/jobs/{name}/stop", { params: { path: { name } } })),
  });
  const [withFiles, setWithFiles] = useState(false);
  const forget = useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE("/api/training/jobs/{name}", { params: { path: { name }, query: { files: withFiles } } })),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ["training"] });
      navigate("/training");
    },
  });

  const keys = ordered(Object.keys(stream.curves));
  const asked = params.get("curves")?.split(",").filter(Boolean);
  const shown = asked ?? keys.slice(0, SHOWN);
  // "none" keeps an emptied choice in the URL (an absent key means the first curves).
  const toggleCurve = (key: string) =>
    setParams({ curves: (shown.includes(key) ? shown.filter((k) => k !== key) : [...shown, key]).join(",") || "none" }, { replace: true });

  return (
    <section>
      <p className="small">
        <Link href="/training">← Training</Link>
      </p>
      <h1>{name}</h1>
      <ErrorNote error={stream.error} />
      {!job && !stream.error && <Loading what="the job" />}
      {job && (
        <>
          <p className="meta" data-testid="job-status">
            {job.kind} on {job.env} · <JobStatus status={job.status} />
            {job.exit_code != null && ` · exit code ${job.exit_code}`}
            {summary.data?.duration_s != null && ` · ${summary.data.duration_s.toFixed(1)} s`}
          </p>
          {job.error && <p className="error">{job.error}</p>}
          <div className="row">
            {live && (
              <button type="button" onClick={() => stop.mutate()} disabled={stop.isPending || job.status === "stopping"}>
                Stop
              </button>
            )}
            {live && <span className="small muted">Stopping sends SIGINT: the trainer saves its model and ends.</span>}
          </div>
          <ErrorNote error={stop.error} />
        </>
      )}

      <h2>Curves</h2>
      {keys.length === 0 && <p className="muted">{stream.ended ? "The run recorded no curve." : "No curve point yet."}</p>}
      {keys.length > 0 && (
        <details className="curve-picker">
          <summary>Choose curves ({shown.filter((k) => keys.includes(k)).length} of {keys.length} shown)</summary>
          <div className="picker">
            {keys.map((k) => (
              <label key={k} className="check">
                <input type="checkbox" checked={shown.includes(k)} onChange={() => toggleCurve(k)} />
                {k}
              </label>
            ))}
          </div>
        </details>
      )}
      <div className="charts">
        {shown
          .filter((k) => keys.includes(k))
          .map((k) => (
            <LineChart key={k} title={k} series={[{ label: k, points: stream.curves[k] }]} />
          ))}
      </div>

      <h2>Log</h2>
      {stream.dropped > 0 && (
        <p className="small muted">
          The first {stream.dropped} lines are left out (the page keeps the last {LOG_KEPT}); the whole log is in the run&apos;s files.
        </p>
      )}
      <pre className="log" role="log" tabIndex={0} aria-label="The job's log" data-testid="log">
        {stream.lines.join("\n")}
      </pre>

      {over && summary.data && (
        <>
          <h2>Summary</h2>
          <table className="curve-summary">
            <thead>
              <tr>
                <th scope="col">Curve</th>
                <th scope="col" className="num">
                  Points
                </th>
                <th scope="col" className="num">
                  First
                </th>
                <th scope="col" className="num">
                  Last
                </th>
                <th scope="col" className="num">
                  Lowest
                </th>
                <th scope="col" className="num">
                  Highest
                </th>
              </tr>
            </thead>
            <tbody>
              {ordered(Object.keys(summary.data.curves)).map((k) => {
                const c = summary.data.curves[k];
                return (
                  <tr key={k}>
                    <th scope="row">{k}</th>
                    <td className="num">{c.points}</td>
                    <td className="num">{c.first[1].toPrecision(4)}</td>
                    <td className="num">{c.last[1].toPrecision(4)}</td>
                    <td className="num">{c.min.toPrecision(4)}</td>
                    <td className="num">{c.max.toPrecision(4)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {summary.data.evaluation && (
            <details>
              <summary>What the trainer&apos;s own evaluation wrote</summary>
              <pre>{JSON.stringify(summary.data.evaluation, null, 1)}</pre>
            </details>
          )}
        </>
      )}
      <ErrorNote error={summary.error} />

      {over && <Files name={name} />}
      {over && summary.data?.model && job && (
        <EvaluateModel job={job} world={worlds.data?.find((w) => w.name === job.env)} />
      )}

      {job && (
        <>
          <h2>Config</h2>
          <details>
            <summary>The {job.kind} config this job ran with</summary>
            <pre>{JSON.stringify(job.config, null, 1)}</pre>
          </details>
        </>
      )}
      {over && (
        <details className="forget">
          <summary>Forget this job</summary>
          <p className="small">The job leaves the list; its run stays in the store.</p>
          <label className="check">
            <input type="checkbox" checked={withFiles} onChange={(e) => setWithFiles(e.target.checked)} />
            Delete its run folder and log too
          </label>
          <button type="button" onClick={() => forget.mutate()} disabled={forget.isPending}>
            Forget {name}
          </button>
          <ErrorNote error={forget.error} />
        </details>
      )}
    </section>
  );
}
