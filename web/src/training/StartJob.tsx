// Start a PPO, SFT or GRPO job from a form built from the trainer's config schema (GET
// /api/training). The server's caps show beside the step field; its 422s land on the field.
import { useMutation } from "@tanstack/react-query";
import { useId, useMemo, useState } from "react";
import { useLocation } from "wouter";
import { api, ApiError, unwrap, type EnvInfo, type Schemas } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";
import { Labelled } from "../evals/Labelled";
import { configFrom, configPath, fieldsOf, initialValues, type Field, type JsonSchema, type Values } from "./schema";
import { SchemaForm, type FieldHints } from "./SchemaForm";

type Kind = Schemas["TrainerKind"];
type JobStart = Schemas["PPOJobStart"] | Schemas["SFTJobStart"] | Schemas["GRPOJobStart"];
type Run = Schemas["TrainingRunRow"];

/** The field each trainer's step cap (max_ppo_timesteps, max_llm_steps) bounds. */
const STEP_FIELD: Record<string, string> = { ppo: "total_timesteps", sft: "max_steps", grpo: "steps" };

/** The fields shown before "More settings". */
const PRIMARY = ["env", "scenario", "model", "total_timesteps", "steps", "max_steps", "episodes", "seed", "n_envs"];

export function StartJob({
  kinds,
  kind,
  setKind,
  worlds,
  runs,
  maxWall,
}: {
  kinds: Kind[];
  kind: string;
  setKind: (kind: string) => void;
  worlds: EnvInfo[];
  runs: Run[];
  maxWall: number;
}) {
  const id = useId();
  const chosen = kinds.find((k) => k.kind === kind) ?? kinds[0];
  return (
    <section className="start-job" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Start a training job</h2>
      <Labelled label="Trainer">
        {(id) => (
          <select id={id} value={chosen?.kind} onChange={(e) => setKind(e.target.value)}>
            {kinds.map((k) => (
              <option key={k.kind} value={k.kind}>
                {k.kind}
                {k.installed ? "" : ` (not installed: pip install 'opsgym[${k.extra}]')`}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      {/* A form of its own per trainer: switching starts again from that trainer's defaults. */}
      {chosen && <KindForm key={chosen.kind} kind={chosen} worlds={worlds} runs={runs} maxWall={maxWall} />}
    </section>
  );
}

function KindForm({ kind, worlds, runs, maxWall }: { kind: Kind; worlds: EnvInfo[]; runs: Run[]; maxWall: number }) {
  const [, navigate] = useLocation();
  const id = useId();
  const fields = useMemo(() => fieldsOf(kind.config_schema as JsonSchema), [kind]);
  const stepField = STEP_FIELD[kind.kind];
  const [values, setValues] = useState<Values>(() => {
    const start = initialValues(fields);
    // A default over this server's cap (PPO's 300,000 steps) would only earn a refusal.
    if (stepField && Number(start[stepField]) > kind.max_steps) start[stepField] = String(kind.max_steps);
    return start;
  });
  const [name, setName] = useState("");
  const [wall, setWall] = useState("");
  const [local, setLocal] = useState<Record<string, string>>({});

  const start = useMutation({
    mutationFn: async (body: JobStart) => unwrap(await api.POST("/api/training/jobs", { body })),
    onSuccess: (job) => navigate(`/training/${encodeURIComponent(job.name)}`),
  });

  const env = String(values.env ?? "");
  const world = worlds.find((w) => w.name === env);
  const hints: FieldHints = {
    choices: (f: Field) => (f.path === "env" ? worlds.map((w) => w.name) : undefined),
    suggestions: (f: Field) => {
      if (f.path === "scenario") return [...(world?.scenarios.map((s) => s.name) ?? []), ...(kind.kind === "sft" ? ["all"] : [])];
      if (f.path === "reference") return world?.policies.filter((p) => !p.includes(":"));
      if (f.path === "model") return ["tiny", ...runs.filter((r) => r.kind !== "ppo" && r.checkpoint).map((r) => `runs:${r.name}`)];
      return undefined;
    },
    max: (f: Field) => (f.path === stepField ? kind.max_steps : undefined),
  };

  const serverErrors: Record<string, string> = {};
  const loose: string[] = [];
  if (start.error instanceof ApiError) {
    for (const f of start.error.fields) {
      const path = configPath(f.field);
      if (path && fields.some((x) => x.path === path)) serverErrors[path] = f.message;
      else loose.push(f.field ? `${f.field}: ${f.message}` : f.message);
    }
  }
  const errors = { ...serverErrors, ...local };

  const submit = (event: React.FormEvent) => {
    event.preventDefault();
    const { config, errors: wrong } = configFrom(fields, values);
    setLocal(wrong);
    if (Object.keys(wrong).length) return;
    // The config follows the schema the server gave for this kind: the body it expects.
    const body = {
      kind: kind.kind,
      config,
      name: name.trim() || undefined,
      max_wall_s: wall ? Number(wall) : undefined,
    } as JobStart;
    start.mutate(body);
  };

  return (
    <form onSubmit={submit} aria-label={`${kind.kind} job`}>
      <p className="small muted">
        At most {kind.max_steps.toLocaleString("en")} {kind.steps} per job on this server.
      </p>
      <SchemaForm
        fields={fields}
        primary={PRIMARY}
        values={values}
        setValue={(path, value) => setValues((v) => ({ ...v, [path]: value }))}
        errors={errors}
        hints={hints}
        idPrefix={id}
      />
      <div className="fields">
        <div className="field">
          <label htmlFor={`${id}-name`}>Job name (optional)</label>
          <input
            id={`${id}-name`}
            value={name}
            onChange={(e) => setName(e.target.value)}
            pattern="[A-Za-z0-9_][A-Za-z0-9_.+@=\-]{0,199}"
            aria-describedby={`${id}-name-help`}
            autoComplete="off"
          />
          <span id={`${id}-name-help`} className="help">
            Letters, digits and _ . + @ = -; by default world__kind__seed__time.
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-wall`}>Wall time limit, seconds (optional)</label>
          <input
            id={`${id}-wall`}
            type="number"
            min={1}
            max={maxWall}
            step="any"
            value={wall}
            onChange={(e) => setWall(e.target.value)}
            aria-describedby={`${id}-wall-help`}
          />
          <span id={`${id}-wall-help`} className="help">
            The job is stopped after it (at most {maxWall.toLocaleString("en")} s).
          </span>
        </div>
      </div>
      {loose.length > 0 && (
        <p role="alert" className="error">
          {loose.join("; ")}
        </p>
      )}
      {!(start.error instanceof ApiError && start.error.fields.length) && <ErrorNote error={start.error} />}
      {Object.keys(errors).length > 0 && (
        <p role="alert" className="error">
          Some settings are wrong: {Object.keys(errors).join(", ")}.
        </p>
      )}
      <button type="submit" className="primary" disabled={!kind.installed || start.isPending}>
        Start {kind.kind} job
      </button>
    </form>
  );
}
