// Play: start an episode of any world and act in it, by hand (a form generated from each
// tool's JSON Schema) or through a policy, one step or to the end. While it runs the page shows
// only what the agent may see; the verdict, the drawn family and the truth appear once it has
// ended. Every bit of the page's state is in the URL (the setup, the session, the tool, the
// step looked at), nothing in browser storage.
import { useLocation, useSearch } from "wouter";
import { useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { Session } from "./play/Session";
import { SetupForm } from "./play/SetupForm";
import { playHref, readState, type PlayState } from "./play/url";
import "./Play.css";

export default function Play() {
  const worlds = useWorlds();
  const search = useSearch();
  const [, navigate] = useLocation();
  const list = worlds.data ?? [];
  const state = readState(search, list[0]?.name ?? "");
  const go = (change: Partial<PlayState>, replace = false) => navigate(playHref({ ...state, ...change }), { replace });

  return (
    <section className="play">
      <h1>Play</h1>
      <ErrorNote error={worlds.error} />
      {worlds.isPending ? (
        <Loading what="the worlds" />
      ) : state.session ? (
        <Session key={state.session} state={{ ...state, session: state.session }} worlds={list} go={go} />
      ) : (
        <SetupForm
          setup={state}
          worlds={list}
          onChange={(setup) => go(setup, true)}
          onStarted={(session) => go({ session, tool: null, step: null })}
        />
      )}
    </section>
  );
}
