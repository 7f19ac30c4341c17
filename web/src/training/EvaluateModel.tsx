// Evaluate a job's model: a small evaluation of the run as a policy (ppo:runs:NAME or
// hf:runs:NAME), optionally beside a scripted policy on the same seeds, followed on its page.
import { useMutation } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useLocation } from "wouter";
import { api, unwrap, type EnvInfo } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { Labelled } from "../evals/Labelled";
import { runPolicy } from "../evals/NewEvaluation";

export function EvaluateModel({ job, world }: { job: { name: string; kind: string; env: string }; world: EnvInfo | undefined }) {
  const [, navigate] = useLocation();
  const id = useId();
  const [episodes, setEpisodes] = useState(4);
  const [scenario, setScenario] = useState("mixed");
  const [beside, setBeside] = useState("oracle");
  const scripted = (world?.policies ?? []).filter((p) => !p.includes(":"));
  const start = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST("/api/evaluations", {
          body: {
            env: job.env,
            policies: [runPolicy(job), ...(beside ? [beside] : [])],
            scenarios: [scenario],
            split: "test",
            episodes,
            trials: 1,
            seeds: "public",
            config: {},
          },
        }),
      ),
    onSuccess: (evaluation) => navigate(`/evaluations/${encodeURIComponent(evaluation.name)}`),
  });
  return (
    <form
      aria-labelledby={`${id}-title`}
      onSubmit={(e) => {
        e.preventDefault();
        start.mutate();
      }}
    >
      <h2 id={`${id}-title`}>Evaluate the model</h2>
      <p className="small muted">
        Plays <code>{runPolicy(job)}</code> on public test seeds of {job.env}; the evaluation opens on its own page.
      </p>
      <div className="row form-row">
        <Labelled label="Episodes">
          {(id) => (
            <input id={id} type="number" min={1} value={episodes} onChange={(e) => setEpisodes(Number(e.target.value))} required />
          )}
        </Labelled>
        <Labelled label="Scenario">
          {(id) => (
            <select id={id} value={scenario} onChange={(e) => setScenario(e.target.value)}>
              {(world?.scenarios ?? [{ name: "mixed" }]).map((s) => (
                <option key={s.name}>{s.name}</option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Beside it, on the same seeds">
          {(id) => (
            <select id={id} value={beside} onChange={(e) => setBeside(e.target.value)}>
              <option value="">no other policy</option>
              {scripted.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          )}
        </Labelled>
        <button type="submit" className="primary" disabled={start.isPending}>
          Evaluate
        </button>
      </div>
      <ErrorNote error={start.error} />
    </form>
  );
}
