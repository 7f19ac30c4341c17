// A new episode: world, scenario (mixed by default), split, seed (blank: the server draws one,
// shown once the episode ends) and config. The form's state is the URL's query, so a setup can
// be linked; the server judges every value and its 422 is shown beside the field it names.
import { cloneElement, useState } from "react";
import { ApiError, type EnvInfo, type Schemas } from "../../api/client";
import { ErrorNote } from "../../components/ErrorNote";
import { useCreate } from "./session";
import { DEFAULT_SCENARIO, SPLITS, type Setup } from "./url";

interface Props {
  setup: Setup;
  worlds: EnvInfo[];
  /** The form changed (the URL follows, replacing its entry). */
  onChange: (setup: Setup) => void;
  onStarted: (sessionId: string) => void;
}

export function SetupForm({ setup, worlds, onChange, onStarted }: Props) {
  const create = useCreate();
  const [notJson, setNotJson] = useState<string | null>(null);
  const world = worlds.find((w) => w.name === setup.env);
  const scenario = world?.scenarios.find((s) => s.name === setup.scenario);
  const set = (change: Partial<Setup>) => onChange({ ...setup, ...change });

  const fieldErrors = create.error instanceof ApiError ? create.error.fields : [];
  const errorOf = (field: string) =>
    field === "config" && notJson ? notJson : fieldErrors.find((e) => e.field === field)?.message;
  const named = new Set(["env", "scenario", "split", "seed", "config"]);
  // What no field shows (a plain message, or a field the form has not) is said below the form.
  const unplaced =
    create.error && (fieldErrors.length === 0 || fieldErrors.some((e) => !named.has(e.field))) ? create.error : null;

  const start = (event: React.FormEvent) => {
    event.preventDefault();
    let config: unknown = {};
    try {
      config = setup.config.trim() ? JSON.parse(setup.config) : {};
    } catch (e) {
      return setNotJson(`Not JSON: ${(e as Error).message}`);
    }
    if (typeof config !== "object" || config === null || Array.isArray(config)) {
      return setNotJson('The config must be a JSON object, such as {"level": 2}.');
    }
    setNotJson(null);
    const body: Schemas["SessionCreate"] = {
      env: setup.env,
      scenario: setup.scenario,
      split: setup.split || null,
      seed: seedOf(setup.seed),
      config: config as Record<string, unknown>,
      curriculum: false,
    };
    create.mutate(body, { onSuccess: (session) => onStarted(session.id) });
  };

  return (
    <form className="play-setup" noValidate onSubmit={start} aria-labelledby="setup-title">
      <h2 id="setup-title">New episode</h2>
      <div className="setup-fields">
        <Field id="setup-env" label="World" error={errorOf("env")}>
          <select
            value={setup.env}
            onChange={(e) => {
              const next = worlds.find((w) => w.name === e.target.value);
              const keep = next?.scenarios.some((s) => s.name === DEFAULT_SCENARIO);
              set({ env: e.target.value, scenario: keep ? DEFAULT_SCENARIO : (next?.scenarios[0]?.name ?? "") });
            }}
          >
            {worlds.map((w) => (
              <option key={w.name} value={w.name}>
                {w.name}
              </option>
            ))}
          </select>
        </Field>
        <Field id="setup-scenario" label="Scenario" error={errorOf("scenario")} hint={scenario?.description}>
          <select value={setup.scenario} onChange={(e) => set({ scenario: e.target.value })}>
            {(world?.scenarios ?? []).map((s) => (
              <option key={s.name} value={s.name}>
                {s.name}
                {s.held_out ? " (held out: dev and test seeds)" : ""}
              </option>
            ))}
          </select>
        </Field>
        <Field id="setup-split" label="Split" error={errorOf("split")} hint="A given seed must lie in it.">
          <select value={setup.split} onChange={(e) => set({ split: e.target.value as Setup["split"] })}>
            <option value="">the seed's (train if drawn)</option>
            {SPLITS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field id="setup-seed" label="Seed" error={errorOf("seed")} hint="Blank: the server draws one and shows it once the episode ends.">
          <input
            type="text"
            inputMode="numeric"
            autoComplete="off"
            value={setup.seed}
            onChange={(e) => set({ seed: e.target.value })}
          />
        </Field>
        <Field
          id="setup-config"
          label="Config"
          error={errorOf("config")}
          hint="The world's public settings, a JSON object (blank: its defaults)."
        >
          <textarea
            rows={1}
            spellCheck={false}
            placeholder="{}"
            value={setup.config}
            onChange={(e) => set({ config: e.target.value })}
          />
        </Field>
      </div>
      <ErrorNote error={unplaced} />
      <button type="submit" className="primary" disabled={create.isPending || !world}>
        {create.isPending ? "Starting…" : "Start episode"}
      </button>
    </form>
  );
}

/**
 * The seed as the server should read it: a JavaScript number when it is one exactly, else the
 * text itself, which the server parses (digits past 2**53) or refuses, naming `seed`.
 */
function seedOf(text: string): number | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  const n = Number(trimmed);
  return (Number.isSafeInteger(n) ? n : trimmed) as number;
}

interface FieldProps {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  children: React.ReactElement<React.InputHTMLAttributes<HTMLElement>>;
}

/** A labelled control with its hint and the server's complaint, each tied to it for readers. */
function Field({ id, label, hint, error, children }: FieldProps) {
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  const control = cloneElement(children, { id, "aria-describedby": described, "aria-invalid": error ? true : undefined });
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {control}
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      )}
    </div>
  );
}
