// The fleet's text-heavy parts, in HTML beside the drawing: the evidence drawer (every NCCL log,
// flight-recorder record, kernel log and version check the agent has read, and the raw output
// of the last read, in one virtualised list) and the workers' delegations and consensus.
import { plural } from "./common";
import { GOOD_NCCL, type FleetObservation, type Finding } from "./fleetTypes";
import { VirtualList, type Row } from "./VirtualList";

/** The drawer's rows, section by section, the evidence as the agent holds it now. */
function evidenceRows(obs: FleetObservation): Row[] {
  const host = (node: string) => `node ${node} (${obs.hosts[Number(node)] ?? "?"})`;
  const ev = obs.evidence;
  const nccl = Object.entries(ev.nccl);
  const flights = Object.entries(ev.flight_recorder);
  const kernels = Object.entries(ev.kernel);
  const versions = Object.entries(ev.versions);
  const raw = rawLines(obs);
  return [
    { head: true, text: `NCCL logs (${nccl.length} of ${obs.hosts.length} nodes read)` },
    ...nccl.flatMap(([node, log]): Row[] => [
      {
        text: `${host(node)}, read at call ${log.call}: NCCL ${log.version}, ${log.truncation_warnings} truncations`,
        tone: log.version === GOOD_NCCL && !log.truncation_warnings ? undefined : "bad",
      },
      ...Object.entries(log.watchdog_ops).map(([rank, op]): Row => ({
        text: `  rank ${rank}: watchdog timeout in ${op}`,
        tone: op === "ALLREDUCE" ? undefined : "bad",
      })),
      ...log.oom_errors.map((rank): Row => ({ text: `  rank ${rank}: CUDA out of memory`, tone: "bad" })),
      ...log.cuda_errors.map((rank): Row => ({ text: `  rank ${rank}: CUDA failure`, tone: "bad" })),
    ]),
    { head: true, text: `Flight recorder (${flights.length} ranks dumped)` },
    ...flights.map(([rank, fr]): Row => ({
      text:
        `rank ${rank}, dumped at call ${fr.call}: seq ${fr.seq} ${fr.op} ${fr.state}; ` +
        `enqueued ${fr.enqueued}, completed ${fr.completed}; ${fr.returned} of ${fr.buffered} entries returned` +
        (fr.behind ? "; behind the others" : ""),
      tone: fr.behind ? "bad" : undefined,
    })),
    { head: true, text: `Kernel logs (${kernels.length} nodes read)` },
    ...kernels.flatMap(([node, k]): Row[] => {
      const current = k.current_xid79_ranks ?? [];
      const found = current.length ? `current Xid 79 on rank ${current.join(", ")}` : "no current Xid 79";
      return [
        { text: `${host(node)}, read at call ${k.call}: ${found}`, tone: current.length ? "bad" : undefined },
        ...(k.xids ?? []).map((x) => ({
          text: `  Xid ${x.xid} at uptime ${x.uptime_s} s${x.rank != null ? ` (rank ${x.rank})` : ""}`,
        })),
      ];
    }),
    { head: true, text: `NCCL versions (${versions.length} nodes checked)` },
    ...versions.map(([node, v]): Row => ({
      text: `${host(node)}: ${v.version} via ${v.LD_LIBRARY_PATH}`,
      tone: v.version === GOOD_NCCL ? "ok" : "bad",
    })),
    { head: true, text: "Patch" },
    { text: patchText(obs) },
    ...Object.entries(obs.patch.diffs).map(([file, differs]): Row => ({
      text: `  ${file}: ${differs ? "its collectives differ" : "no difference"}`,
      tone: differs ? "bad" : "ok",
    })),
    ...(raw.length ? [{ head: true, text: `Last output (${obs.last?.tool}, ${raw.length} lines)` }] : []),
    ...raw.map((text) => ({ text })),
  ];
}

function patchText(obs: FleetObservation): string {
  const { candidates, applied } = obs.patch;
  const mismatch = obs.evidence.collective_mismatch ? "collectives differ between ranks; " : "";
  const patched = applied ? `; applied: ${applied}` : "";
  return `${mismatch}candidates: ${candidates?.join(", ") ?? "not identified"}${patched}`;
}

interface DumpEntry {
  collective_seq_id: number;
  profiling_name: string;
  state: string;
  duration_ms: number | null;
}

/** The last read's raw text, line by line: a log, a kernel log, a flight-recorder dump (one line
 * an entry). */
function rawLines(obs: FleetObservation): string[] {
  const report = obs.last && !obs.last.rejected ? obs.last.report : null;
  if (!report) return [];
  for (const key of ["log", "dmesg", "output"]) {
    const text = report[key];
    if (typeof text === "string") return text.split("\n").filter(Boolean);
  }
  if (typeof report.dump !== "string") return [];
  try {
    const { entries = [] } = JSON.parse(report.dump) as { entries?: DumpEntry[] };
    return entries.map((e) => {
      const took = e.duration_ms != null ? ` ${e.duration_ms} ms` : "";
      return `seq ${e.collective_seq_id} ${e.profiling_name} ${e.state}${took}`;
    });
  } catch {
    return report.dump.split("\n");
  }
}

export function EvidenceDrawer({ obs }: { obs: FleetObservation }) {
  const rows = evidenceRows(obs);
  const items = rows.filter((r) => !r.head).length;
  return (
    <details className="pic-drawer" data-testid="evidence-drawer">
      <summary>Evidence drawer ({plural(items, "line")})</summary>
      <VirtualList rows={rows} label="Evidence the agent has read" testid="evidence-list" />
    </details>
  );
}

function target(f: Finding): string {
  if (!f.target) return "none";
  return Object.entries(f.target)
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(", ");
}

export function Coordination({ coordination: c }: { coordination: FleetObservation["coordination"] }) {
  if (!c.enabled) return null;
  const findings = Object.values(c.findings);
  const voters = Object.keys(c.consensus?.votes ?? {}).length;
  return (
    <div className="pic-coordination" data-testid="coordination">
      <p className="pic-side-title">
        Delegations: {c.used} of {c.budget} used
      </p>
      {findings.length > 0 && (
        <div className="pic-scroll">
          <table>
            <caption className="pic-caption">The workers' latest findings</caption>
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Fault</th>
                <th scope="col">Target</th>
                <th scope="col" className="num">
                  Confidence
                </th>
                <th scope="col">Recommends</th>
              </tr>
            </thead>
            <tbody>
              {findings.map((f) => (
                <tr key={f.worker} data-testid="finding">
                  <td>{f.worker.replaceAll("_", " ")}</td>
                  <td>{f.fault.replaceAll("_", " ")}</td>
                  <td>{target(f)}</td>
                  <td className="num">
                    {f.confidence.toFixed(2)} ± {f.uncertainty.toFixed(2)}
                  </td>
                  <td>
                    <code>{f.recommended_action}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {c.consensus && (
        <div data-testid="consensus">
          <p>
            Consensus:{" "}
            {c.consensus.majority ? (
              <>
                <code>{c.consensus.majority}</code> ({c.consensus.support} of {voters} votes)
              </>
            ) : (
              "no majority"
            )}
          </p>
          <ul className="pic-votes">
            {Object.entries(c.consensus.votes).map(([worker, vote]) => (
              <li key={worker}>
                {worker.replaceAll("_", " ")}: <code>{vote}</code>
                {vote === c.consensus?.majority ? " (the majority)" : ""}
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
