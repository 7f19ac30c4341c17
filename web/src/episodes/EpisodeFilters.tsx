// The Episodes page's filter form. Its fields start from the URL (the form is re-made when the
// URL changes, so back/forward show the filters of the list they bring back); a choice in a
// list applies at once, a typed value on Enter or "Apply". Applying goes back to page 1.
import { useId, type ChangeEvent, type FormEvent } from "react";
import { Link } from "wouter";
import type { EnvInfo } from "../api/client";
import { FILTER_KEYS, SPLITS, type Filters } from "./listQuery";

interface Props {
  filters: Filters;
  worlds: EnvInfo[];
  evaluations: string[];
  onApply: (filters: Filters) => void;
}

/** The distinct values of a list, sorted. */
function distinct(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

export function EpisodeFilters({ filters, worlds, evaluations, onApply }: Props) {
  const id = useId();
  const chosen = worlds.filter((w) => !filters.env || w.name === filters.env);
  const policies = distinct(chosen.flatMap((w) => w.policies.filter((p) => !p.endsWith(":"))));
  const scenarios = distinct(chosen.flatMap((w) => w.scenarios.map((s) => s.name)));
  const families = distinct(chosen.flatMap((w) => w.scenarios.filter((s) => !s.mixture).map((s) => s.name)));
  const outcomes = distinct(chosen.flatMap((w) => w.outcomes));
  // A deep link may name an outcome of a world not loaded (yet): keep it choosable.
  if (filters.outcome && !outcomes.includes(filters.outcome)) outcomes.push(filters.outcome);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const next: Filters = {};
    for (const key of FILTER_KEYS) {
      const value = String(data.get(key) ?? "").trim();
      if (value) next[key] = value;
    }
    onApply(next);
  };
  const applyNow = (event: ChangeEvent<HTMLSelectElement>) => event.currentTarget.form?.requestSubmit();

  return (
    <form role="search" aria-label="Filter episodes" className="ep-filters" onSubmit={submit}>
      <label>
        World
        <select name="env" defaultValue={filters.env ?? ""} onChange={applyNow}>
          <option value="">any</option>
          {worlds.map((w) => (
            <option key={w.name}>{w.name}</option>
          ))}
        </select>
      </label>
      <label>
        Evaluation
        <select name="evaluation" defaultValue={filters.evaluation ?? ""} onChange={applyNow}>
          <option value="">any</option>
          {distinct([...evaluations, ...(filters.evaluation ? [filters.evaluation] : [])]).map((name) => (
            <option key={name}>{name}</option>
          ))}
        </select>
      </label>
      <label>
        Policy
        <input name="policy" list={`${id}-policies`} defaultValue={filters.policy ?? ""} size={12} />
      </label>
      <label>
        Scenario
        <input name="scenario" list={`${id}-scenarios`} defaultValue={filters.scenario ?? ""} size={14} />
      </label>
      <label>
        Family
        <input name="family" list={`${id}-families`} defaultValue={filters.family ?? ""} size={14} />
      </label>
      <label>
        Outcome
        <select name="outcome" defaultValue={filters.outcome ?? ""} onChange={applyNow}>
          <option value="">any</option>
          {outcomes.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      </label>
      <label>
        Split
        <select name="split" defaultValue={filters.split ?? ""} onChange={applyNow}>
          <option value="">any</option>
          {SPLITS.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <div className="ep-filter-actions">
        <button type="submit">Apply</button>
        <Link href="/episodes">Clear</Link>
      </div>
      <datalist id={`${id}-policies`}>
        {policies.map((p) => (
          <option key={p} value={p} />
        ))}
      </datalist>
      <datalist id={`${id}-scenarios`}>
        {scenarios.map((s) => (
          <option key={s} value={s} />
        ))}
      </datalist>
      <datalist id={`${id}-families`}>
        {families.map((f) => (
          <option key={f} value={f} />
        ))}
      </datalist>
    </form>
  );
}
