// The store's episodes as react-query queries: a page of the list (with the server's count),
// one stored episode (record and lies), its replay check, and windows of its replayed timeline.
// A stored episode has ended, so all of it, truth included, is the viewer's to show.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../api/client";
import { apiQuery, type ListQuery } from "./listQuery";

export type EpisodeRow = Schemas["EpisodeRow"];
export type StoredEpisode = Schemas["StoredEpisode"];
export type EpisodeRecord = Schemas["Record"];
export type RecordedEvent = Schemas["RecordedEvent"];
export type Lie = Schemas["Lie"];
export type ReplayCheck = Schemas["ReplayCheck"];
export type Verdict = Schemas["Verdict"];
export type TimelineStep = Schemas["TimelineStep"];

/** The header of `GET /api/episodes` that counts every match, past the page. */
const TOTAL_HEADER = "X-Total-Count";

/** Steps per timeline request: the picture of a step fetches the window around it. */
export const WINDOW = 50;

export function useEpisodePage(query: ListQuery) {
  return useQuery({
    queryKey: ["episodes", "page", query],
    queryFn: async () => {
      const result = await api.GET("/api/episodes", { params: { query: apiQuery(query) } });
      const rows = unwrap(result);
      const total = Number(result.response.headers.get(TOTAL_HEADER));
      return { rows, total: Number.isFinite(total) ? total : rows.length };
    },
    // The previous page stays on screen while the next loads: no flash of "Loading".
    placeholderData: keepPreviousData,
  });
}

export function useEvaluationNames() {
  return useQuery({
    queryKey: ["evaluations"],
    queryFn: async () => unwrap(await api.GET("/api/evaluations")),
    select: (evaluations) => evaluations.map((e) => e.name),
  });
}

export function useStoredEpisode(id: number) {
  return useQuery({
    queryKey: ["episode", id],
    queryFn: async () =>
      unwrap(await api.GET("/api/episodes/{episode_id}", { params: { path: { episode_id: id } } })),
    staleTime: Infinity, // a stored record never changes
  });
}

export function useReplayCheck(id: number) {
  return useQuery({
    queryKey: ["episode", id, "replay"],
    queryFn: async () =>
      unwrap(await api.GET("/api/episodes/{episode_id}/replay", { params: { path: { episode_id: id } } })),
    staleTime: Infinity,
  });
}

/** The replayed timeline's window that holds `step` (1-based): what the agent saw after it. */
export function useTimelineWindow(id: number, step: number, enabled: boolean) {
  const start = Math.floor(Math.max(step - 1, 0) / WINDOW) * WINDOW;
  return useQuery({
    queryKey: ["episode", id, "timeline", start],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/episodes/{episode_id}/timeline", {
          params: { path: { episode_id: id }, query: { start, limit: WINDOW } },
        }),
      ),
    enabled,
    staleTime: Infinity,
    placeholderData: keepPreviousData,
  });
}
