// A played session on the server, as the Play page asks for it: the session as its agent may
// see it, the calls (yours or a policy's), and, only once the episode has ended, its record.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";

export type View = Schemas["SessionView"];
export type Told = Schemas["ToldStep"];
export type Observation = Record<string, unknown>;

/** What a click asks of the session: one call of a tool, or a policy's call(s). */
export type Act = { tool: string; args: Record<string, unknown> } | { policy: string; toEnd: boolean };

const key = (id: string) => ["play", "session", id];

/** Start an episode; the new session goes straight into the cache (no second request). */
export function useCreate() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["SessionCreate"]) => unwrap(await api.POST("/api/sessions", { body })),
    onSuccess: ({ tools: _, ...view }) => client.setQueryData<View>(key(view.id), view),
  });
}

/** The session as its agent may see it (with every step it was told). */
export function useSession(id: string) {
  return useQuery({
    queryKey: key(id),
    queryFn: async () => unwrap(await api.GET("/api/sessions/{session_id}", { params: { path: { session_id: id } } })),
    staleTime: Infinity,
  });
}

/**
 * Act on the session. A tool call is strict: arguments its schema refuses are a 422 naming the
 * field, and the episode takes no step (a slip at a form should not cost a step); whether the
 * call may run now is still the world's to say, as for any agent.
 */
export function useAct(id: string, onStepped: (before: View | undefined, after: View) => void) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (act: Act) => {
      const body =
        "tool" in act
          ? { tool: act.tool, args: act.args, strict: true, to_end: false }
          : { policy: act.policy, to_end: act.toEnd, strict: false };
      return unwrap(await api.POST("/api/sessions/{session_id}/step", { params: { path: { session_id: id } }, body }));
    },
    onSuccess: ({ steps, session }) => {
      const before = client.getQueryData<View>(key(id));
      const told: Told[] = steps.map(({ done: _, ...step }) => step);
      client.setQueryData<View>(key(id), { ...session, history: [...(before?.history ?? []), ...told] });
      onStepped(before, session);
    },
  });
}

/** The ended episode's record, truth included: never asked for while the episode runs. */
export function useRecord(id: string, ended: boolean) {
  return useQuery({
    queryKey: ["play", "record", id],
    queryFn: async () =>
      unwrap(await api.GET("/api/sessions/{session_id}/record", { params: { path: { session_id: id } } })),
    enabled: ended,
    staleTime: Infinity,
  });
}

/**
 * The ended episode's record judged again from its calls, on the server (asked only by what
 * shows an ended episode). A record posted back from the browser would not do: JavaScript
 * writes 30.0 as 30, which breaks the record's hash chain.
 */
export function useReplayCheck(id: string) {
  return useQuery({
    queryKey: ["play", "replay", id],
    queryFn: async () =>
      unwrap(await api.GET("/api/sessions/{session_id}/replay", { params: { path: { session_id: id } } })),
    staleTime: Infinity,
  });
}
