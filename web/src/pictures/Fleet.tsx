// The fleet war room: the topology with every rank's tile (what the dashboard, the logs and the
// agent's own actions say of it), the alerts, the stale mark, the ring, throughput against
// nominal, the evidence drawer and the workers' delegations. After the end, the same topology
// from the truth: the faulty ranks, the lost GPU, the congested spine, the red herrings.
import { memo } from "react";
import { Gauges, Pair, STALE_ICON, TONE_ICON, leftTone, minutes, percent, plural, type Lie, type Tone } from "./common";
import { FleetDiagram, GLYPHS, type BoxMark, type Marks, type TileMark } from "./FleetDiagram";
import { Coordination, EvidenceDrawer } from "./FleetEvidence";
import {
  GOOD_NCCL,
  GPUS_PER_NODE,
  HOT_MEM_GIB,
  LEAF_OF_NODE,
  N_NODES,
  N_RANKS,
  N_SPINES,
  SILENT_HEARTBEAT_S,
  type Alert,
  type FleetObservation,
  type FleetTruth,
  type GpuReading,
} from "./fleetTypes";
import { LiesTold } from "./Lies";

export const FleetPicture = memo(function FleetPicture({
  observation,
  truth,
  lies,
}: {
  observation: FleetObservation;
  truth?: FleetTruth | null;
  lies?: Lie[] | null;
}) {
  return (
    <Pair
      reported={<Reported obs={observation} />}
      truth={
        truth && (
          <>
            <FleetDiagram
              title="The fleet: the true state"
              testid="fleet-true"
              hosts={observation.hosts}
              marks={trueMarks(observation, truth)}
            />
            <TrueFacts obs={observation} truth={truth} />
            <LiesTold lies={lies} atStep={truth.lies} step={observation.step} />
          </>
        )
      }
    />
  );
});

function Reported({ obs }: { obs: FleetObservation }) {
  const t = obs.telemetry;
  return (
    <>
      <p className="pic-facts-line" data-testid="fleet-scrape">
        {t ? (
          <>
            Dashboard scrape {t.scrape}, taken at call {t.scraped_at_call} ({plural(t.age_calls, "call")} ago){" "}
            {t.stale ? (
              <span className="pic-chip pic-tone-unknown pic-stale" data-testid="stale-telemetry">
                {STALE_ICON} stale: before the last remediation
              </span>
            ) : (
              <span className="pic-chip pic-tone-ok">{TONE_ICON.ok} current</span>
            )}
          </>
        ) : (
          "The dashboard has not been read."
        )}{" "}
        · next scrape in {plural(obs.next_refresh_in, "call")}
      </p>
      <FleetDiagram
        title={`The fleet as reported at ${minutes(obs.clock)}`}
        testid="fleet-reported"
        hosts={obs.hosts}
        marks={reportedMarks(obs)}
      />
      <Legend />
      <Alerts alerts={t?.alerts ?? null} />
      <Gauges
        title="The incident's budgets"
        gauges={[
          {
            name: "time",
            label: "Window left",
            value: obs.minutes_left,
            max: obs.window_minutes,
            text: `${minutes(obs.minutes_left)} left`,
            tone: leftTone(obs.minutes_left, obs.window_minutes),
          },
          {
            name: "tokens",
            label: "Tokens spent",
            value: obs.tokens,
            max: obs.token_allowance,
            text: `${obs.tokens} of ${obs.token_allowance}`,
            tone: obs.tokens > obs.token_allowance ? "bad" : "ok",
          },
          {
            name: "delegations",
            label: "Delegations used",
            value: obs.coordination.used,
            max: obs.coordination.budget,
            text: `${obs.coordination.used} of ${obs.coordination.budget}`,
            tone: leftTone(obs.coordination.budget - obs.coordination.used, obs.coordination.budget),
          },
        ]}
      />
      <Coordination coordination={obs.coordination} />
      <EvidenceDrawer obs={obs} />
    </>
  );
}

function Legend() {
  return (
    <ul className="pic-legend" aria-label="What a tile's mark means">
      {GLYPHS.map(([glyph, meaning]) => (
        <li key={glyph}>
          <span className="pic-legend-glyph" aria-hidden="true">
            {glyph}
          </span>{" "}
          {meaning}
        </li>
      ))}
    </ul>
  );
}

function Alerts({ alerts }: { alerts: Alert[] | null }) {
  if (!alerts) return null;
  return (
    <div data-testid="alerts">
      <p className="pic-side-title">Alerts in the scrape: {alerts.length}</p>
      {alerts.length > 0 && (
        <ul className="pic-alerts">
          {alerts.map((a, i) => (
            <li key={i} data-testid="alert" data-rank={a.rank ?? ""}>
              <span className={`pic-chip pic-tone-${a.severity === "critical" ? "bad" : "unknown"}`}>
                <span aria-hidden="true">{a.severity === "critical" ? TONE_ICON.bad : "!"}</span> {a.severity}
              </span>{" "}
              {a.source}
              {a.rank != null ? ` (rank ${a.rank})` : ""}: {a.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

// -- what the agent was told ------------------------------------------------------------------

/** Each rank's readings: all of them right after a fresh scrape (the last report), else the
 * dashboard's hot list (the observation keeps only the GPUs it flags). */
function readings(obs: FleetObservation): Map<number, GpuReading> {
  const out = new Map<number, GpuReading>();
  const last = obs.last;
  const nodes =
    last?.tool === "check_telemetry" && !last.rejected
      ? (last.report.nodes as { gpus?: GpuReading[] }[] | undefined)
      : undefined;
  for (const node of nodes ?? []) for (const gpu of node.gpus ?? []) out.set(gpu.rank, gpu);
  for (const gpu of obs.telemetry?.hot_gpus ?? []) if (!out.has(gpu.rank)) out.set(gpu.rank, gpu);
  return out;
}

function isHot(g: GpuReading): boolean {
  return g.mem_gib == null || g.mem_gib >= HOT_MEM_GIB || g.heartbeat_s >= SILENT_HEARTBEAT_S;
}

function readingText(g: GpuReading): string {
  const mem = g.mem_gib == null ? "memory unreadable" : `${g.mem_gib} GiB`;
  const util = g.util_pct == null ? "" : ` · util ${g.util_pct}%`;
  return `${mem}${util} · heartbeat ${g.heartbeat_s} s`;
}

function reportedMarks(obs: FleetObservation): Marks {
  const read = readings(obs);
  return {
    tiles: Array.from({ length: N_RANKS }, (_, rank) => tileMark(obs, rank, read.get(rank))),
    nodes: Array.from({ length: N_NODES }, (_, node) => nodeMark(obs, node)),
    spines: Array.from({ length: N_SPINES }, (_, spine) => spineMark(obs, spine)),
    spares: obs.spares.map((spare) => {
      const serving = obs.hosts.indexOf(spare.host);
      return {
        tone: spare.free ? "ok" : "unknown",
        badge: spare.free ? "free" : "in use",
        notes: [[spare.host], ...(serving >= 0 ? [[`serves node ${serving}`] as [string]] : [])],
        data: { "data-free": spare.free, "data-host": spare.host },
      };
    }),
    ring: ringMark(obs),
    throughput: throughputMark(obs.telemetry),
    benchmark: benchmarkText(obs),
  };
}

/** A rank as the dashboard, the logs the agent read and its own actions show it. */
function tileMark(obs: FleetObservation, rank: number, reading: GpuReading | undefined): TileMark {
  const ev = obs.evidence;
  const node = Math.floor(rank / GPUS_PER_NODE);
  const nccl = ev.nccl[node];
  const alert = obs.telemetry?.alerts.find((a) => a.rank === rank);
  const op = nccl?.watchdog_ops[rank];
  const flight = ev.flight_recorder[rank];
  // (glyph, note) for each thing known, most telling first
  const signs: [string, string][] = [];
  if (nccl?.oom_errors.includes(rank)) signs.push(["✗", "CUDA out of memory in its log"]);
  if (nccl?.cuda_errors.includes(rank)) signs.push(["✗", "a CUDA failure in its log"]);
  if (ev.kernel[node]?.current_xid79_ranks?.includes(rank)) signs.push(["✗", "a current Xid 79 in the kernel log"]);
  if (alert) signs.push(["!", `${alert.severity}: ${alert.message}`]);
  if (reading && isHot(reading)) signs.push(["▲", "hot on the dashboard"]);
  if (op && op !== "ALLREDUCE") signs.push(["≠", `watchdog: stuck in ${op}`]);
  if (flight?.behind) signs.push(["◀", `flight recorder behind (seq ${flight.seq})`]);
  if (obs.actions.restarted_ranks.includes(rank)) signs.push(["↻", "restarted"]);
  const bad = signs.some(([g]) => g !== "↻");
  const notes = signs.map(([, note]) => note);
  if (reading) notes.push(readingText(reading));
  if (flight && !flight.behind) notes.push(`flight recorder: ${flight.op} ${flight.state}`);
  return {
    tone: bad ? "bad" : obs.telemetry ? "ok" : "unknown",
    glyph: signs[0]?.[0] ?? "",
    notes,
    data: { "data-signs": signs.map(([g]) => g).join("") || undefined },
  };
}

/** A node: the dashboard's status (stale with its scrape), its NCCL, what was done to it. */
function nodeMark(obs: FleetObservation, node: number): BoxMark {
  const t = obs.telemetry;
  const status = t?.nodes[node]?.status;
  const version = obs.evidence.versions[node]?.version ?? obs.evidence.nccl[node]?.version;
  const notes: [string, Tone?][] = [];
  if (version && version !== GOOD_NCCL) notes.push([`${TONE_ICON.bad} NCCL ${version}`, "bad"]);
  if (obs.actions.fixed_paths.includes(node)) notes.push([`${TONE_ICON.ok} path fixed`, "ok"]);
  if (obs.actions.rescheduled.includes(node)) notes.push(["on its spare"]);
  if (t?.alerts.some((a) => a.rank == null && a.source === obs.hosts[node])) notes.push(["! alert on node", "bad"]);
  const drained = obs.actions.drained.includes(node);
  const [tone, badge]: [Tone, string] = drained
    ? ["unknown", "drained"]
    : status === "ok"
      ? ["ok", "ok"]
      : status
        ? ["bad", status]
        : ["unknown", "not scraped"];
  return { tone, badge, stale: t?.stale, notes, data: { "data-status": drained ? "drained" : (status ?? "none") } };
}

/** A spine: the dashboard's word on it (as on the nodes) and its uplinks, once read. */
function spineMark(obs: FleetObservation, spine: number): BoxMark {
  const t = obs.telemetry;
  const read = obs.evidence.topology?.spines.find((s) => s.spine === spine);
  const alert = t?.alerts.find((a) => a.source === `spine-${spine}`);
  const notes: [string, Tone?][] = [
    [read ? `uplink ${percent(read.uplink_utilisation)}, ECN ${read.ecn_marked_packets_per_s}/s` : "uplinks not read"],
  ];
  if (obs.actions.ring.spine === spine) notes.push(["ring pinned here"]);
  const [tone, badge]: [Tone, string] = alert ? ["bad", "alert"] : t ? ["ok", "no alert"] : ["unknown", "not scraped"];
  return { tone, badge, notes, data: { "data-spine": spine, "data-alert": Boolean(alert) } };
}

function ringMark(obs: FleetObservation): Marks["ring"] {
  const { reordered, spine } = obs.actions.ring;
  const pinned = spine != null ? `, pinned to spine-${spine}` : "";
  const done = reordered ? `reordered${pinned}` : "not reordered";
  const topology = obs.evidence.topology;
  if (!topology) return { order: null, text: `not read (show_topology) · ${done}` };
  const { leaf_crossings, route } = topology.ring;
  return {
    order: topology.ring.order,
    text: `${leaf_crossings} leaf crossings, route ${route} (as read at call ${topology.call}) · ${done}`,
  };
}

function throughputMark(t: FleetObservation["telemetry"]): Marks["throughput"] {
  if (!t) return { fraction: null, tone: "unknown", text: "not read" };
  const { status, throughput_tokens_per_s: now, nominal_tokens_per_s: nominal } = t.job;
  const tokens = `${now.toLocaleString("en")} of ${nominal.toLocaleString("en")} tokens/s`;
  return {
    fraction: now / nominal,
    tone: status === "running" ? "ok" : "bad",
    text: `job ${status}: ${tokens} (${percent(now / nominal)})${t.stale ? ` · ${STALE_ICON} stale` : ""}`,
  };
}

function benchmarkText(obs: FleetObservation): string {
  const { samples, target, streak } = obs.evidence.benchmark;
  if (!samples.length) return "All-reduce benchmark: not run";
  const shown = samples.map((s) => `${s >= target ? TONE_ICON.ok : TONE_ICON.bad} ${s.toFixed(2)}`).join("  ");
  return `All-reduce benchmark, bus bandwidth against nominal: ${shown} (target ${target}, streak ${streak})`;
}

// -- the truth ------------------------------------------------------------------------------

/** A true fault of a rank (its key and its words), and whether it still holds. */
function rankFault(truth: FleetTruth, rank: number): { key: string; fault: string; still: boolean } | null {
  const f = truth.facts;
  if (f.present.includes("oom") && f.oom_ranks.includes(rank))
    return { key: "oom", fault: "out of memory", still: truth.oom.includes(rank) };
  if (f.present.includes("gpu_lost") && f.lost_rank === rank)
    return { key: "gpu_lost", fault: "GPU lost", still: truth.lost.includes(rank) };
  if (f.present.includes("desync") && f.desync_rank === rank)
    return { key: "desync", fault: `desync (${f.desync_file})`, still: truth.desync };
  return null;
}

/** Whether a rank is truly unwell now (out of memory, on a lost GPU, the desynced one). */
function unwell(truth: FleetTruth, rank: number): boolean {
  return truth.oom.includes(rank) || truth.lost.includes(rank) || (truth.desync && truth.facts.desync_rank === rank);
}

/** The ranks the dashboard flags (an alert, the hot list) that are truly healthy. */
function redHerrings(obs: FleetObservation, truth: FleetTruth): number[] {
  const t = obs.telemetry;
  if (!t) return [];
  const flagged = new Set<number>();
  for (const a of t.alerts) if (a.rank != null && a.severity !== "critical") flagged.add(a.rank);
  for (const g of t.hot_gpus) flagged.add(g.rank);
  return [...flagged].filter((rank) => !unwell(truth, rank) && !rankFault(truth, rank)?.still).sort((a, b) => a - b);
}

/** Whether a node is truly degraded: on the wrong NCCL, or one of its ranks unwell. */
function degraded(truth: FleetTruth, node: number): boolean {
  if (truth.version_nodes.includes(node)) return true;
  return Array.from({ length: GPUS_PER_NODE }, (_, g) => node * GPUS_PER_NODE + g).some(
    (r) => truth.oom.includes(r) || truth.lost.includes(r),
  );
}

function trueMarks(obs: FleetObservation, truth: FleetTruth): Marks {
  const f = truth.facts;
  const herrings = new Set(redHerrings(obs, truth));
  const tiles: TileMark[] = Array.from({ length: N_RANKS }, (_, rank) => {
    const fault = rankFault(truth, rank);
    const herring = herrings.has(rank);
    const notes = herring ? ["red herring: flagged, truly healthy now"] : [];
    if (fault) {
      return {
        tone: fault.still ? "bad" : "ok",
        glyph: fault.still ? "✗" : "✓",
        notes: [`${fault.fault}: ${fault.still ? "still" : "fixed"}`, ...notes],
        data: { "data-fault": fault.key, "data-fixed": !fault.still, "data-herring": herring || undefined },
      };
    }
    if (herring) return { tone: "ok", glyph: "○", notes, data: { "data-herring": true } };
    return { tone: "ok", glyph: "", notes: ["healthy"] };
  });
  const nodes: BoxMark[] = Array.from({ length: N_NODES }, (_, node) => {
    const bad = degraded(truth, node);
    const notes: [string, Tone?][] = [];
    if (f.present.includes("version") && f.version_node === node) {
      notes.push(
        truth.version_nodes.includes(node)
          ? [`${TONE_ICON.bad} NCCL 2.21.5`, "bad"]
          : [`${TONE_ICON.ok} NCCL fixed`, "ok"],
      );
    }
    if (bad && obs.telemetry?.nodes[node]?.status === "ok") notes.push([`${TONE_ICON.bad} masked as ok`, "bad"]);
    if (truth.drained.includes(node)) notes.push(["drained"]);
    if (truth.replaced.includes(node)) notes.push(["replaced by spare"]);
    return { tone: bad ? "bad" : "ok", badge: bad ? "degraded" : "healthy", notes, data: { "data-degraded": bad } };
  });
  const spines: BoxMark[] = Array.from({ length: N_SPINES }, (_, spine) => {
    const congested = f.present.includes("congestion") && f.congested_spine === spine;
    const notes: [string, Tone?][] = [];
    if (congested) notes.push([`bandwidth −${percent(f.bw_drop)} on its uplinks`, "bad"]);
    if (truth.ring.spine === spine) notes.push(["the ring is pinned here"]);
    return {
      tone: congested ? "bad" : "ok",
      badge: congested ? "congested" : "clear",
      notes,
      data: { "data-spine": spine, "data-congested": congested },
    };
  });
  const spares: BoxMark[] = obs.spares.map((spare, leaf) => {
    const used = truth.replaced.some((node) => LEAF_OF_NODE[node] === leaf);
    return { tone: "ok", badge: used ? "in use" : "free", notes: [[spare.host]], data: { "data-host": spare.host } };
  });
  return {
    tiles,
    nodes,
    spines,
    spares,
    ring: {
      order: obs.evidence.topology?.ring.order ?? null,
      text: truth.ring.aware
        ? `topology-aware${truth.ring.spine != null ? `, pinned to spine-${truth.ring.spine}` : ""}`
        : "the job's default order",
    },
    throughput: {
      fraction: truth.throughput_factor,
      tone: truth.healthy ? "ok" : "bad",
      text:
        `job truly ${truth.status}, at ${percent(truth.throughput_factor)} of nominal ` +
        `(fabric ${percent(truth.fabric_factor)}, capacity ${percent(truth.capacity)})`,
    },
  };
}

function TrueFacts({ obs, truth }: { obs: FleetObservation; truth: FleetTruth }) {
  const f = truth.facts;
  const faults: [string, boolean][] = [];
  for (const rank of f.present.includes("oom") ? f.oom_ranks : [])
    faults.push([`rank ${rank} ran out of memory`, truth.oom.includes(rank)]);
  if (f.present.includes("gpu_lost"))
    faults.push([`rank ${f.lost_rank} lost its GPU`, truth.lost.includes(f.lost_rank)]);
  if (f.present.includes("desync")) faults.push([`rank ${f.desync_rank} desynced (${f.desync_file})`, truth.desync]);
  if (f.present.includes("version"))
    faults.push([`node ${f.version_node} loads NCCL 2.21.5`, truth.version_nodes.includes(f.version_node)]);
  if (f.present.includes("congestion")) faults.push([`spine-${f.congested_spine} congested`, truth.fabric_factor < 1]);
  const herrings = redHerrings(obs, truth);
  const reached = Object.entries(truth.subgoals);
  return (
    <div className="pic-true-facts">
      <p className="pic-side-title">
        Faults of <span data-testid="truth-family">{truth.family ?? truth.task}</span>:{" "}
        {faults.length || "none (a false alarm)"}
      </p>
      <ul data-testid="truth-faults">
        {faults.map(([text, still]) => (
          <li key={text} data-still={still}>
            <span className={`pic-chip pic-tone-${still ? "bad" : "ok"}`}>
              <span aria-hidden="true">{still ? TONE_ICON.bad : TONE_ICON.ok}</span> {still ? "still" : "fixed"}
            </span>{" "}
            {text}
          </li>
        ))}
      </ul>
      <p data-testid="truth-herrings">
        Red herrings on the dashboard: {herrings.length ? herrings.map((r) => `rank ${r}`).join(", ") : "none"}
      </p>
      <p>
        Lost training: {minutes(Math.round(truth.downtime_minutes * 10) / 10)} against an SLO of{" "}
        {minutes(truth.slo_minutes)}
        {truth.destroyed ? ` · destroyed: ${truth.destroyed}` : ""}
      </p>
      {reached.length > 0 && (
        <p>
          Sub-goals reached: {reached.filter(([, ok]) => ok).length} of {reached.length}
          {reached.some(([, ok]) => !ok)
            ? ` (missed: ${reached
                .filter(([, ok]) => !ok)
                .map(([name]) => name.replaceAll("_", " "))
                .join(", ")})`
            : ""}
        </p>
      )}
    </div>
  );
}
