// The Episodes page's state, all of it in the URL's query string (so a filtered, paged list
// deep-links and back/forward walk through it): the filters, the page and the page size.
// Parsing is forgiving: a value the server would refuse (an unknown split, a page of -3) is
// dropped or clamped here, and the list shows what the rest of the URL asks for.

/** The store's filters, in the order the form shows them (names as `GET /api/episodes` takes them). */
export const FILTER_KEYS = ["env", "evaluation", "policy", "scenario", "family", "outcome", "split"] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];
export type Filters = Partial<Record<FilterKey, string>>;

export const SPLITS = ["train", "dev", "test"] as const;
export const PAGE_SIZES = [10, 25, 50, 100] as const;
export const DEFAULT_PAGE_SIZE = 50;

export interface ListQuery {
  filters: Filters;
  /** 1-based. */
  page: number;
  size: number;
}

export function readListQuery(search: URLSearchParams): ListQuery {
  const filters: Filters = {};
  for (const key of FILTER_KEYS) {
    const value = search.get(key)?.trim();
    if (value) filters[key] = value;
  }
  if (filters.split && !(SPLITS as readonly string[]).includes(filters.split)) delete filters.split;
  const size = Number(search.get("size"));
  const page = Number(search.get("page"));
  return {
    filters,
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_PAGE_SIZE,
  };
}

/** The query string of a list state (without "?"), defaults left out, keys in a fixed order. */
export function listSearch({ filters, page, size }: ListQuery): string {
  const out = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = filters[key];
    if (value) out.set(key, value);
  }
  if (size !== DEFAULT_PAGE_SIZE) out.set("size", String(size));
  if (page > 1) out.set("page", String(page));
  return out.toString();
}

/** The query of `GET /api/episodes` for a list state: newest first, one page of it. */
export function apiQuery({ filters, page, size }: ListQuery) {
  return { ...filters, order: "newest", limit: size, offset: (page - 1) * size };
}

/** How many pages `total` episodes fill (at least one, so that "page 1 of 1" reads right). */
export function pageCount(total: number, size: number): number {
  return Math.max(1, Math.ceil(total / size));
}
