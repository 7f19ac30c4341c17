// The Play page's state, all of it in the query string: the new episode's setup (world,
// scenario, split, seed, config), the session on screen, the tool chosen and the step looked
// at. Nothing of a session is kept anywhere else in the browser (no storage): a reload or a
// shared link finds it again on the server, which shows it only as its agent may see it.

export type Split = "train" | "dev" | "test";
export const SPLITS: Split[] = ["train", "dev", "test"];

export interface Setup {
  env: string;
  scenario: string;
  /** Blank: the seed's split, or train when the server draws the seed. */
  split: Split | "";
  /** Blank: the server draws one (shown once the episode ends). */
  seed: string;
  /** The world's public settings, as JSON text (blank: none). */
  config: string;
}

export interface PlayState extends Setup {
  session: string | null;
  tool: string | null;
  /** The step looked at (null: the latest). */
  step: number | null;
}

export const DEFAULT_SCENARIO = "mixed";

export function readState(search: string, defaultEnv: string): PlayState {
  const q = new URLSearchParams(search);
  const split = q.get("split") ?? "";
  const step = Number(q.get("step") ?? "");
  return {
    env: q.get("env") || defaultEnv,
    scenario: q.get("scenario") || DEFAULT_SCENARIO,
    split: (SPLITS as string[]).includes(split) ? (split as Split) : "",
    seed: q.get("seed") ?? "",
    config: q.get("config") ?? "",
    session: q.get("session") || null,
    tool: q.get("tool") || null,
    step: q.has("step") && Number.isInteger(step) && step >= 0 ? step : null,
  };
}

/** The page's path and query for ``state`` (blank fields left out, so links stay short). */
export function playHref(state: Partial<PlayState> & Pick<PlayState, "env">): string {
  const q = new URLSearchParams();
  const put = (key: string, value: string | number | null | undefined) => {
    if (value !== null && value !== undefined && value !== "") q.set(key, String(value));
  };
  put("env", state.env);
  put("scenario", state.scenario);
  put("split", state.split);
  put("seed", state.seed?.trim());
  put("config", state.config?.trim());
  put("session", state.session);
  put("tool", state.tool);
  put("step", state.step);
  return `/play?${q}`;
}

/** Only the setup of ``state``: a new episode's form, no session. */
export function setupOf(state: PlayState): Setup {
  const { env, scenario, split, seed, config } = state;
  return { env, scenario, split, seed, config };
}
