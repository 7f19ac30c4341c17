// A session on screen: while it runs, only what its agent may see (the calls, the reports, the
// rewards paid, the world as observed) and the means to act; once it has ended, the record too.
import { useState } from "react";
import { Link } from "wouter";
import { ApiError, type EnvInfo } from "../../api/client";
import { ErrorNote, Loading } from "../../components/ErrorNote";
import { ToolForm } from "../../components/ToolForm";
import { toolsOf } from "../../components/toolSchema";
import { Ended } from "./Ended";
import { componentTotals, RewardChips, StepDetail, StepLog, signed } from "./Steps";
import { useAct, useRecord, useSession, type Act, type Observation, type View } from "./session";
import { playHref, setupOf, type PlayState } from "./url";

interface Props {
  state: PlayState & { session: string };
  worlds: EnvInfo[];
  go: (change: Partial<PlayState>, replace?: boolean) => void;
}

export function Session({ state, worlds, go }: Props) {
  const id = state.session;
  const session = useSession(id);
  // What the agent saw after each step this page watched (in memory only, never in storage).
  const [seen, setSeen] = useState<Record<number, Observation>>({});
  const act = useAct(id, (before, after) => {
    setSeen((old) => ({
      ...old,
      ...(before && { [before.steps]: before.observation }),
      [after.steps]: after.observation,
    }));
    if (state.step !== null) go({ step: null }, true); // follow the newest step
  });
  const view = session.data;
  const record = useRecord(id, view?.done === true);

  if (session.error) {
    const gone = session.error instanceof ApiError && session.error.status === 404;
    return (
      <>
        <ErrorNote error={session.error} />
        {gone && (
          <p>
            The session is closed (an idle one is closed after a while; an ended episode is in the
            store). <Link href={playHref(setupOf(state))}>Start a new episode</Link>.
          </p>
        )}
      </>
    );
  }
  if (!view) return <Loading what="the session" />;

  const world = worlds.find((w) => w.name === view.env);
  const history = view.history ?? [];
  const selected = Math.min(state.step ?? view.steps, view.steps);
  const pictures: Record<number, Observation> = { ...seen, [view.steps]: view.observation };
  const events = record.data?.record.events;
  const truth = selected > 0 ? (events?.find((e) => e.step === selected)?.truth ?? null) : null;

  return (
    <>
      <section className="play-episode" aria-labelledby="episode-title">
        <h2 id="episode-title">
          {view.env} · {view.scenario}
        </h2>
        <p className="row small">
          <span>split {view.split}</span>
          <span>
            seed {view.seed !== null ? view.seed : <em>drawn by the server, shown once the episode ends</em>}
          </span>
          <span data-testid="step-count">
            step {view.steps}
            {view.max_steps ? ` of ${view.max_steps}` : ""}
          </span>
          <span>
            return <strong data-testid="return">{signed(view.return)}</strong>
          </span>
          <Link href={playHref(setupOf(state))}>New episode</Link>
        </p>
      </section>

      {view.done && <Ended view={view} record={record.data} recordError={record.error} seedChosen={state.seed.trim() !== ""} />}

      <div className={view.done ? "play-grid play-grid-ended" : "play-grid"}>
        <StepDetail
          env={view.env}
          step={selected > 0 ? (history[selected - 1] ?? null) : null}
          observation={pictures[selected] ?? null}
          truth={truth}
          lies={record.data?.lies.told ?? null}
        />
        {!view.done && world && <ActPanel view={view} world={world} state={state} go={go} act={act} />}
      </div>

      <section aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        <StepLog
          history={history}
          selected={selected}
          hrefOf={(step) => playHref({ ...state, step })}
          lies={record.data?.lies.told}
        />
      </section>

      <section aria-labelledby="reward-title">
        <h2 id="reward-title">Reward</h2>
        <p>
          Return <strong>{signed(view.return)}</strong>, by component:
        </p>
        <RewardChips components={componentTotals(history)} label="Reward by component" />
      </section>
    </>
  );
}

interface ActProps {
  view: View;
  world: EnvInfo;
  state: PlayState;
  go: Props["go"];
  act: ReturnType<typeof useAct>;
}

/** A call of your own through a tool's form, or a policy's step, or a policy to the end. */
function ActPanel({ view, world, state, go, act }: ActProps) {
  const tools = toolsOf(world);
  const tool = tools.find((t) => t.name === state.tool) ?? tools[0];
  const policies = world.policies.filter((p) => !p.endsWith(":")); // prefixed kinds need a name
  const [policy, setPolicy] = useState(policies.includes("oracle") ? "oracle" : policies[0]);
  const last = act.variables;
  const refused = act.error instanceof ApiError ? act.error : null;
  // The server's complaints go beside the fields of the tool that was called.
  const toolErrors = refused && last && "tool" in last && last.tool === tool?.name ? refused.fields : [];
  const send = (a: Act) => act.mutate(a);

  return (
    <section className="play-act" aria-labelledby="act-title" aria-busy={act.isPending}>
      <h2 id="act-title">Act</h2>
      <div className="field">
        <label htmlFor="play-tool">Tool</label>
        <select
          id="play-tool"
          value={tool?.name ?? ""}
          onChange={(e) => {
            act.reset();
            go({ tool: e.target.value }, true);
          }}
        >
          {tools.map((t) => (
            <option key={t.name} value={t.name}>
              {t.name}
            </option>
          ))}
        </select>
      </div>
      {tool && (
        <ToolForm
          key={`${view.id}-${tool.name}`}
          tool={tool}
          errors={toolErrors}
          busy={act.isPending}
          onCall={(args) => send({ tool: tool.name, args })}
        />
      )}
      {act.error && !toolErrors.length ? <ErrorNote error={act.error} /> : null}

      <h3>Or let a policy act</h3>
      <div className="field">
        <label htmlFor="play-policy">Policy</label>
        <select id="play-policy" value={policy} onChange={(e) => setPolicy(e.target.value)}>
          {policies.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      <div className="row">
        <button type="button" disabled={act.isPending} onClick={() => send({ policy, toEnd: false })}>
          Take one step
        </button>
        <button type="button" disabled={act.isPending} onClick={() => send({ policy, toEnd: true })}>
          Run to the end
        </button>
      </div>
    </section>
  );
}
