// Two stored training runs side by side: one curve of both overlaid, and their configs' diff.
// The runs, the curve and whether to show equal settings live in the query string.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../api/client";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { Labelled } from "../evals/Labelled";
import type { SetParams } from "../evals/searchParams";
import { ordered, type Curves } from "./chart";
import { LineChart } from "./LineChart";

type Run = Schemas["TrainingRun"];

/** A nested config as dotted settings: {lora: {r: 16}} → {"lora.r": 16}. */
export function flatten(config: Record<string, unknown>, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      Object.assign(out, flatten(value as Record<string, unknown>, `${prefix}${key}.`));
    } else {
      out[prefix + key] = value;
    }
  }
  return out;
}

/** Every setting of either config, with both values and whether they differ. */
export function diff(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
): { key: string; a: unknown; b: unknown; differs: boolean }[] {
  const fa = flatten(a);
  const fb = flatten(b);
  const keys = [...new Set([...Object.keys(fa), ...Object.keys(fb)])].sort();
  return keys.map((key) => ({ key, a: fa[key], b: fb[key], differs: JSON.stringify(fa[key]) !== JSON.stringify(fb[key]) }));
}

function useRun(name: string) {
  return useQuery({
    queryKey: ["training", "run", name],
    queryFn: async () => unwrap(await api.GET("/api/training/runs/{name}", { params: { path: { name } } })),
  });
}

const shown = (v: unknown) => (v === undefined ? "—" : JSON.stringify(v));

export function CompareRuns({ names, params, setParams }: { names: [string, string]; params: URLSearchParams; setParams: SetParams }) {
  const a = useRun(names[0]);
  const b = useRun(names[1]);
  return (
    <section aria-labelledby="compare-title" className="compare">
      <h2 id="compare-title">
        Compare {names[0]} and {names[1]}
      </h2>
      {(a.isPending || b.isPending) && <Loading what="the two runs" />}
      <ErrorNote error={a.error ?? b.error} />
      {a.data && b.data && <Both a={a.data} b={b.data} params={params} setParams={setParams} />}
    </section>
  );
}

function Both({ a, b, params, setParams }: { a: Run; b: Run; params: URLSearchParams; setParams: SetParams }) {
  const ca: Curves = (a.curves ?? {}) as Curves;
  const cb: Curves = (b.curves ?? {}) as Curves;
  const keys = ordered([...new Set([...Object.keys(ca), ...Object.keys(cb)])]);
  const curve = params.get("curve") ?? keys[0] ?? "";
  const all = params.get("settings") === "all";
  const rows = diff(a.config, b.config);
  const listed = all ? rows : rows.filter((r) => r.differs);
  return (
    <>
      <div className="row form-row">
        <Labelled label="Curve">
          {(id) => (
            <select id={id} value={curve} onChange={(e) => setParams({ curve: e.target.value })}>
              {keys.map((k) => (
                <option key={k}>{k}</option>
              ))}
            </select>
          )}
        </Labelled>
        <p className="legend small" aria-label="Legend">
          <span className="swatch series-0" aria-hidden="true" /> {a.name} (solid){" "}
          <span className="swatch series-1" aria-hidden="true" /> {b.name} (dashed)
        </p>
      </div>
      {curve && (
        <div className="overlay">
          <LineChart
            title={curve}
            series={[
              { label: a.name, points: ca[curve] ?? [] },
              { label: b.name, points: cb[curve] ?? [] },
            ]}
          />
        </div>
      )}
      <h3>Config</h3>
      <label className="check">
        <input type="checkbox" checked={all} onChange={(e) => setParams({ settings: e.target.checked ? "all" : null })} />
        Show the settings they share too
      </label>
      <p className="small muted">
        {rows.filter((r) => r.differs).length} of {rows.length} settings differ ({a.kind} on {a.env}, {b.kind} on {b.env}).
      </p>
      <div className="scroll-box" tabIndex={0} role="region" aria-label="Config differences">
        <table className="config-diff" data-testid="config-diff">
          <thead>
            <tr>
              <th scope="col">Setting</th>
              <th scope="col">{a.name}</th>
              <th scope="col">{b.name}</th>
            </tr>
          </thead>
          <tbody>
            {listed.map((r) => (
              <tr key={r.key} data-setting={r.key} data-differs={r.differs} className={r.differs ? "differs" : undefined}>
                <th scope="row">
                  {r.key}
                  {r.differs && <span className="tag">differs</span>}
                </th>
                <td>
                  <code>{shown(r.a)}</code>
                </td>
                <td>
                  <code>{shown(r.b)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
