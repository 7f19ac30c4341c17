// A training job followed live: its status, curves and log from the server's event stream
// (`status`, `metrics`, `log`, then `end`). A finished job's stream replays all of it and ends,
// so the page needs no other source for them.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useReducer, useSyncExternalStore } from "react";
import { token, TOKEN_CHANGED, type Schemas } from "../api/client";
import type { Curves } from "./chart";
import { follow } from "./sse";

export type Job = Schemas["TrainingJob"];

/** Most log lines kept on the page (the whole log: GET .../logs or the run's files). */
export const LOG_KEPT = 2000;

export interface JobStream {
  job: Job | null;
  curves: Curves;
  lines: string[];
  /** Lines dropped from the front to keep LOG_KEPT. */
  dropped: number;
  ended: boolean;
  error: unknown;
}

type Action =
  | { type: "reset" }
  | { type: "status"; job: Job }
  | { type: "metrics"; curves: Curves }
  | { type: "log"; lines: string[] }
  | { type: "end" }
  | { type: "error"; error: unknown };

const EMPTY: JobStream = { job: null, curves: {}, lines: [], dropped: 0, ended: false, error: null };

export function reduce(state: JobStream, action: Action): JobStream {
  switch (action.type) {
    case "reset":
      return EMPTY;
    case "status":
      return { ...state, job: action.job };
    case "metrics":
      return { ...state, curves: action.curves };
    case "log": {
      const lines = [...state.lines, ...action.lines];
      const over = Math.max(0, lines.length - LOG_KEPT);
      return { ...state, lines: over ? lines.slice(over) : lines, dropped: state.dropped + over };
    }
    case "end":
      return { ...state, ended: true };
    case "error":
      return { ...state, error: action.error };
  }
}

function onToken(changed: () => void) {
  window.addEventListener(TOKEN_CHANGED, changed);
  return () => window.removeEventListener(TOKEN_CHANGED, changed);
}

export function useJobStream(name: string): JobStream {
  const [state, dispatch] = useReducer(reduce, EMPTY);
  const client = useQueryClient();
  // A stream refused for want of a token starts again once one is given.
  const bearer = useSyncExternalStore(onToken, token.get);

  useEffect(() => {
    const abort = new AbortController();
    dispatch({ type: "reset" });
    const url = `/api/training/jobs/${encodeURIComponent(name)}/stream`;
    follow(
      url,
      (event) => {
        const data = JSON.parse(event.data) as unknown;
        if (event.event === "status") dispatch({ type: "status", job: data as Job });
        else if (event.event === "metrics") dispatch({ type: "metrics", curves: (data as { curves: Curves }).curves });
        else if (event.event === "log") dispatch({ type: "log", lines: (data as { lines: string[] }).lines });
        else if (event.event === "end") {
          dispatch({ type: "end" });
          // What the job left (its summary, files, run) is final now.
          void client.invalidateQueries({ queryKey: ["training"] });
        }
      },
      abort.signal,
    ).catch((error: unknown) => dispatch({ type: "error", error }));
    return () => abort.abort();
  }, [name, client, bearer]);

  return state;
}
