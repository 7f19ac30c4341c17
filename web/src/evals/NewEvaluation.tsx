// Start a small evaluation on the server (at most its max_eval_episodes episodes), then follow
// it on its own page. Trained policies are the server's runs (ppo:runs:NAME, hf:runs:NAME).
import { useMutation, useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useLocation } from "wouter";
import { api, unwrap, type EnvInfo, type Schemas } from "../api/client";
import { useServer } from "../api/hooks";
import { ErrorNote } from "../components/ErrorNote";
import { Labelled } from "./Labelled";

type Start = Schemas["EvaluationStart"];

/** The policy name that loads a stored training run over HTTP. */
export function runPolicy(run: { kind: string; name: string }): string {
  return `${run.kind === "ppo" ? "ppo" : "hf"}:runs:${run.name}`;
}

/** Names typed by hand ("planner:oracle, llm:gpt-x"), split on commas and white space. */
export function splitNames(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

export function NewEvaluation({ worlds }: { worlds: EnvInfo[] }) {
  const [, navigate] = useLocation();
  const server = useServer();
  const [env, setEnv] = useState(worlds[0]?.name ?? "release");
  const world = worlds.find((w) => w.name === env);
  const scripted = (world?.policies ?? []).filter((p) => !p.includes(":"));
  const prefixes = (world?.policies ?? []).filter((p) => p.endsWith(":"));
  const [chosen, setChosen] = useState<string[]>(["oracle"]);
  const [scenarios, setScenarios] = useState<string[]>(["mixed"]);
  const [other, setOther] = useState("");
  const [episodes, setEpisodes] = useState(4);
  const [trials, setTrials] = useState(1);
  const [split, setSplit] = useState<Start["split"]>("test");
  const [seeds, setSeeds] = useState<Start["seeds"]>("public");
  const [name, setName] = useState("");
  const formId = useId();

  const runs = useQuery({
    queryKey: ["training", "runs"],
    queryFn: async () => unwrap(await api.GET("/api/training/runs")),
  });
  const trained = (runs.data ?? []).filter((r) => r.env === env && r.checkpoint).map(runPolicy);

  const policies = [...chosen.filter((p) => scripted.includes(p) || trained.includes(p)), ...splitNames(other)];
  const size = policies.length * scenarios.length * episodes * trials;
  const most = server.data?.max_eval_episodes;

  const start = useMutation({
    mutationFn: async (body: Start) => unwrap(await api.POST("/api/evaluations", { body })),
    onSuccess: (job) => navigate(`/evaluations/${encodeURIComponent(job.name)}`),
  });

  const submit = (event: React.FormEvent) => {
    event.preventDefault();
    start.mutate({
      env,
      policies,
      scenarios,
      split,
      episodes,
      trials,
      seeds,
      config: {},
      name: name.trim() || undefined,
    });
  };
  const toggle = (list: string[], set: (l: string[]) => void, item: string) =>
    set(list.includes(item) ? list.filter((x) => x !== item) : [...list, item]);

  return (
    <form className="new-eval" onSubmit={submit} aria-labelledby={`${formId}-title`}>
      <h2 id={`${formId}-title`}>Start a small evaluation</h2>
      <div className="row form-row">
        <Labelled label="World">
          {(id) => (
            <select
              id={id}
              value={env}
              onChange={(e) => {
                setEnv(e.target.value);
                setScenarios(["mixed"]);
              }}
            >
              {worlds.map((w) => (
                <option key={w.name}>{w.name}</option>
              ))}
            </select>
          )}
        </Labelled>
        <Labelled label="Split">
          {(id) => (
            <select id={id} value={split} onChange={(e) => setSplit(e.target.value as Start["split"])}>
              <option>test</option>
              <option>dev</option>
              <option>train</option>
            </select>
          )}
        </Labelled>
        <Labelled label="Episodes per policy and scenario">
          {(id) => (
            <input id={id} type="number" min={1} value={episodes} onChange={(e) => setEpisodes(Number(e.target.value))} required />
          )}
        </Labelled>
        <Labelled label="Trials per seed">
          {(id) => (
            <input id={id} type="number" min={1} max={16} value={trials} onChange={(e) => setTrials(Number(e.target.value))} required />
          )}
        </Labelled>
        <Labelled label="Seeds">
          {(id) => (
            <select id={id} value={seeds} onChange={(e) => setSeeds(e.target.value as Start["seeds"])}>
              <option value="public">public (the split&apos;s first seeds)</option>
              <option value="sealed">sealed (drawn now, stored)</option>
            </select>
          )}
        </Labelled>
        <Labelled label="Name (optional)">
          {(id) => (
            <input id={id} value={name} onChange={(e) => setName(e.target.value)} pattern="[\w.+:@\-]+" />
          )}
        </Labelled>
      </div>
      <div className="row form-row choices">
        <fieldset>
          <legend>Policies</legend>
          <div className="check-list">
            {[...scripted, ...trained].map((p) => (
              <label key={p} className="check">
                <input type="checkbox" checked={chosen.includes(p)} onChange={() => toggle(chosen, setChosen, p)} />
                {p}
              </label>
            ))}
          </div>
          <Labelled label="Other policies">
            {(id) => (
              <input id={id} value={other} onChange={(e) => setOther(e.target.value)} aria-describedby={`${formId}-other`} />
            )}
          </Labelled>
          <p id={`${formId}-other`} className="small muted">
            Separated by commas; prefixed kinds: {prefixes.join(" ")}
          </p>
        </fieldset>
        <fieldset>
          <legend>Scenarios</legend>
          <div className="check-list">
            {(world?.scenarios ?? []).map((s) => (
              <label key={s.name} className="check">
                <input
                  type="checkbox"
                  checked={scenarios.includes(s.name)}
                  onChange={() => toggle(scenarios, setScenarios, s.name)}
                />
                {s.name}
                {s.held_out && <span className="tag">held out</span>}
              </label>
            ))}
          </div>
        </fieldset>
      </div>
      <p className="small" aria-live="polite">
        {size} episodes{most != null && ` (this server plays at most ${most} over HTTP)`}
      </p>
      <ErrorNote error={start.error} />
      <button type="submit" className="primary" disabled={start.isPending || policies.length === 0 || scenarios.length === 0}>
        Start the evaluation
      </button>
    </form>
  );
}
