// Previous and next pages as links (real URLs: they open in a new tab, and back/forward walk
// them), where we are, and how many rows a page holds.
import { Link } from "wouter";
import { listSearch, PAGE_SIZES, pageCount, type ListQuery } from "./listQuery";

interface Props {
  query: ListQuery;
  total: number;
  onSize: (size: number) => void;
}

export function Pager({ query, total, onSize }: Props) {
  const pages = pageCount(total, query.size);
  const href = (page: number) => {
    const search = listSearch({ ...query, page });
    return search ? `/episodes?${search}` : "/episodes";
  };
  return (
    <nav aria-label="Episode pages" className="ep-pager">
      {query.page > 1 ? (
        <Link href={href(query.page - 1)} rel="prev">
          ← Newer
        </Link>
      ) : (
        <span className="muted" aria-disabled="true">
          ← Newer
        </span>
      )}
      <span data-testid="page-of">
        Page {query.page} of {pages}
      </span>
      {query.page < pages ? (
        <Link href={href(query.page + 1)} rel="next">
          Older →
        </Link>
      ) : (
        <span className="muted" aria-disabled="true">
          Older →
        </span>
      )}
      <label className="ep-inline-label">
        Rows per page
        <select value={query.size} onChange={(e) => onSize(Number(e.currentTarget.value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </nav>
  );
}
