// Home: the worlds (scenarios, held-out marks, outcomes), recent episodes, running evaluations
// and training jobs, and how this server is guarded.
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap } from "../api/client";
import { useOutcomeKind, useServer, useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { KIND_ICON, OutcomeBadge } from "../outcomes";

const LIVE = ["queued", "running", "stopping"];

export default function Home() {
  const server = useServer();
  const worlds = useWorlds();
  const kind = useOutcomeKind();
  const recent = useQuery({
    queryKey: ["episodes", "recent"],
    queryFn: async () =>
      unwrap(await api.GET("/api/episodes", { params: { query: { order: "newest", limit: 10 } } })),
  });
  const evaluations = useQuery({
    queryKey: ["evaluations"],
    queryFn: async () => unwrap(await api.GET("/api/evaluations")),
    refetchInterval: 5000,
  });
  const jobs = useQuery({
    queryKey: ["training", "jobs"],
    queryFn: async () => unwrap(await api.GET("/api/training/jobs")),
    refetchInterval: 5000,
  });

  const runningEvals = (evaluations.data ?? []).filter((e) => e.job && LIVE.includes(e.job.status));
  const runningJobs = (jobs.data ?? []).filter((j) => LIVE.includes(j.status));

  return (
    <section>
      <h1>opsgym workbench</h1>
      <ErrorNote error={server.error} />
      {server.data && (
        <p className="server" data-testid="security">
          Server {server.data.package_version} (API {server.data.api_version}) ·{" "}
          {server.data.auth === "token" ? (
            <strong>token required</strong>
          ) : (
            <strong>loopback only, no token</strong>
          )}
          {server.data.agent_token ? " · agent token set" : ""} · training over HTTP{" "}
          {server.data.training ? "on" : "off"}
          {server.data.allow_overrides ? " · overrides allowed (leak tests)" : ""}
        </p>
      )}

      <h2>Worlds</h2>
      {worlds.isPending && <Loading what="the worlds" />}
      <ErrorNote error={worlds.error} />
      <div className="cards">
        {(worlds.data ?? []).map((w) => (
          <article key={w.name} className="card" aria-labelledby={`world-${w.name}`}>
            <h3 id={`world-${w.name}`}>
              {w.name} <span className="muted small">{w.gym_id}</span>
            </h3>
            <p>{w.summary}</p>
            <p className="small">
              Outcomes:{" "}
              {w.outcomes.map((o) => (
                <span key={o} className="chip-gap">
                  <OutcomeBadge outcome={o} kind={kind(w.name, o)} />
                </span>
              ))}
            </p>
            <details>
              <summary>
                {w.scenarios.length} scenarios ({w.scenarios.filter((s) => s.held_out).length} held out)
              </summary>
              <ul className="small">
                {w.scenarios.map((s) => (
                  <li key={s.name}>
                    <strong>{s.name}</strong>
                    {s.held_out && <span className="tag">held out</span>}
                    {s.mixture && <span className="tag">mixture</span>} — {s.description}
                  </li>
                ))}
              </ul>
            </details>
            <Link href={`/play?env=${w.name}`}>Play {w.name}</Link>
          </article>
        ))}
      </div>

      <h2>Running</h2>
      {runningEvals.length === 0 && runningJobs.length === 0 && <p className="muted">Nothing is running.</p>}
      <ul>
        {runningEvals.map((e) => (
          <li key={e.name}>
            Evaluation <Link href={`/evaluations/${encodeURIComponent(e.name)}`}>{e.name}</Link>: {e.job?.status},{" "}
            {e.episodes} episodes
          </li>
        ))}
        {runningJobs.map((j) => (
          <li key={j.name}>
            Training <Link href={`/training/${encodeURIComponent(j.name)}`}>{j.name}</Link> ({j.kind}, {j.env}):{" "}
            {j.status}
          </li>
        ))}
      </ul>

      <h2>Recent episodes</h2>
      <ErrorNote error={recent.error} />
      {recent.data && recent.data.length === 0 && <p className="muted">The store holds no episode yet.</p>}
      {recent.data && recent.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Episode</th>
              <th scope="col">World</th>
              <th scope="col">Policy</th>
              <th scope="col">Scenario</th>
              <th scope="col">Outcome</th>
              <th scope="col">Return</th>
            </tr>
          </thead>
          <tbody>
            {recent.data.map((e) => (
              <tr key={e.id}>
                <td>
                  <Link href={`/episodes/${e.id}`}>#{e.id}</Link>
                </td>
                <td>{e.env}</td>
                <td>{e.policy}</td>
                <td>{e.scenario === e.family ? e.scenario : `${e.scenario} → ${e.family}`}</td>
                <td>
                  <OutcomeBadge outcome={e.outcome} kind={kind(e.env, e.outcome)} />
                </td>
                <td className="num">{e.return.toFixed(2)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="small muted">
        Outcome marks: {KIND_ICON.safe} safe · {KIND_ICON.harmful} harm · {KIND_ICON.unfinished} unfinished
      </p>
    </section>
  );
}
