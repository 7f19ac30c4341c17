// Episodes: the store, newest first, filtered by world, evaluation, policy, scenario, family,
// outcome and split, and paged by the server (`X-Total-Count`). Everything the list shows is
// in the URL's query string, so a filtered page deep-links and back/forward walk the lists.
import { useLocation, useSearch } from "wouter";
import { useWorlds } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { EpisodeFilters } from "../episodes/EpisodeFilters";
import { EpisodeTable } from "../episodes/EpisodeTable";
import { listSearch, readListQuery, type ListQuery } from "../episodes/listQuery";
import { Pager } from "../episodes/Pager";
import { useEpisodePage, useEvaluationNames } from "../episodes/queries";
import "../episodes/Episodes.css";

function describe(query: ListQuery, total: number, shown: number): string {
  if (total === 0) return "No stored episode matches.";
  const first = (query.page - 1) * query.size + 1;
  if (shown === 0) return `No episode on page ${query.page}: ${total.toLocaleString()} match in all.`;
  return `Episodes ${first.toLocaleString()}–${(first + shown - 1).toLocaleString()} of ${total.toLocaleString()}, newest first.`;
}

export default function Episodes() {
  const search = useSearch();
  const [, navigate] = useLocation();
  const query = readListQuery(new URLSearchParams(search));
  const worlds = useWorlds();
  const evaluations = useEvaluationNames();
  const page = useEpisodePage(query);

  const go = (next: ListQuery) => {
    const text = listSearch(next);
    navigate(text ? `/episodes?${text}` : "/episodes");
  };

  return (
    <section className="episodes">
      <h1>Episodes</h1>
      <ErrorNote error={worlds.error ?? evaluations.error} />
      {worlds.data && (
        <EpisodeFilters
          // Re-made when the URL or the choices change: its fields start from them.
          key={`${search}|${evaluations.data?.length ?? 0}`}
          filters={query.filters}
          worlds={worlds.data}
          evaluations={evaluations.data ?? []}
          onApply={(filters) => go({ ...query, filters, page: 1 })}
        />
      )}
      <ErrorNote error={page.error} />
      {page.isPending && <Loading what="the episodes" />}
      {page.data && (
        // While the next page loads, the last one stays, dimmed and marked busy.
        <div className={page.isPlaceholderData ? "ep-stale" : undefined} aria-busy={page.isPlaceholderData}>
          <p className="ep-count" role="status" data-testid="episode-count" data-total={page.data.total}>
            {describe(query, page.data.total, page.data.rows.length)}
          </p>
          {page.data.rows.length > 0 && (
            <EpisodeTable rows={page.data.rows} caption={describe(query, page.data.total, page.data.rows.length)} />
          )}
          <Pager query={query} total={page.data.total} onSize={(size) => go({ ...query, size, page: 1 })} />
        </div>
      )}
    </section>
  );
}
