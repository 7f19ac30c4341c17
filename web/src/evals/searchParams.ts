// The page's state in its query string: read it, and change some keys (a new history entry, so
// back and forward step through what the user chose).
import { useCallback, useMemo } from "react";
import { useLocation, useSearch } from "wouter";

export type SetParams = (changes: Record<string, string | null | undefined>, options?: { replace?: boolean }) => void;

export function useSearchParams(): [URLSearchParams, SetParams] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = useMemo(() => new URLSearchParams(search), [search]);
  const set = useCallback<SetParams>(
    (changes, options) => {
      const next = new URLSearchParams(search);
      for (const [key, value] of Object.entries(changes)) {
        if (value == null || value === "") next.delete(key);
        else next.set(key, value);
      }
      const query = next.toString();
      navigate(query ? `${location}?${query}` : location, { replace: options?.replace });
    },
    [search, location, navigate],
  );
  return [params, set];
}
