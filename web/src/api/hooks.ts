// Shared queries: the worlds (fetched once) and what an outcome of a world means.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type EnvInfo, type OutcomeKind } from "./client";

export function useWorlds() {
  return useQuery({
    queryKey: ["envs"],
    queryFn: async () => unwrap(await api.GET("/api/envs")) as EnvInfo[],
    staleTime: Infinity,
  });
}

export function useServer() {
  return useQuery({
    queryKey: ["server"],
    queryFn: async () => unwrap(await api.GET("/api/server")),
    staleTime: 60_000,
  });
}

/** ``(env, outcome) → kind`` from the worlds' descriptions (``unfinished`` when unknown). */
export function useOutcomeKind(): (env: string, outcome: string | null | undefined) => OutcomeKind {
  const worlds = useWorlds().data ?? [];
  return (env, outcome) => {
    const world = worlds.find((w) => w.name === env);
    return (outcome && (world?.outcome_kinds[outcome] as OutcomeKind | undefined)) || "unfinished";
  };
}
