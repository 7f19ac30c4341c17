// The fleet world's observation and truth, as `Fleet.observe` and `Fleet.truth` build them
// (src/opsgym/envs/fleet/world.py), and the fleet's fixed shape (fleet/domain.py).

export const GPUS_PER_NODE = 8;
export const N_NODES = 4;
export const N_RANKS = N_NODES * GPUS_PER_NODE;
export const N_SPINES = 2;
/** Nodes 0-1 hang off leaf 0, nodes 2-3 off leaf 1; every leaf has an uplink to every spine. */
export const LEAF_OF_NODE = [0, 0, 1, 1] as const;
/** The NCCL every node should load; anything else is the version fault. */
export const GOOD_NCCL = "2.27.0";
/** A GPU the dashboard lists as hot (``diagnose._hot``): near its memory limit, or silent. */
export const HOT_MEM_GIB = 79;
export const SILENT_HEARTBEAT_S = 30;

export interface Alert {
  severity: string;
  source: string;
  rank: number | null;
  message: string;
}

export interface GpuReading {
  rank: number;
  gpu?: number;
  mem_gib: number | null;
  util_pct?: number | null;
  heartbeat_s: number;
}

export interface Job {
  name: string;
  status: string;
  throughput_tokens_per_s: number;
  nominal_tokens_per_s: number;
  nodes_in_job: number;
}

export interface Telemetry {
  scrape: number;
  scraped_at_call: number;
  job: Job;
  alerts: Alert[];
  hot_gpus: GpuReading[];
  nodes: { host: string; status: string }[];
  stale: boolean;
  age_calls: number;
}

export interface NcclSummary {
  version: string;
  truncation_warnings: number;
  watchdog_ops: Record<string, string>;
  oom_errors: number[];
  cuda_errors: number[];
  call: number;
}

export interface FlightSummary {
  seq: number;
  op: string;
  state: string;
  enqueued: number;
  completed: number;
  behind: boolean;
  buffered: number;
  returned: number;
  call: number;
}

export interface KernelSummary {
  current_xid79_ranks?: number[];
  xids?: { xid: number; rank: number | null; uptime_s: number }[];
  call: number;
}

export interface Topology {
  spines: { spine: number; uplink_utilisation: number; ecn_marked_packets_per_s: number }[];
  ring: { order: number[]; leaf_crossings: number; route: string };
  call: number;
}

export interface Finding {
  worker: string;
  fault: string;
  target: Record<string, unknown> | null;
  confidence: number;
  uncertainty: number;
  recommended_action: string;
}

export interface FleetObservation {
  incident: string;
  clock: number;
  window_minutes: number;
  minutes_left: number;
  calls: number;
  tokens: number;
  token_allowance: number;
  refresh_every: number;
  next_refresh_in: number;
  hosts: string[];
  spares: { leaf: number; host: string; free: boolean }[];
  phase: number;
  telemetry: Telemetry | null;
  evidence: {
    flight_recorder: Record<string, FlightSummary>;
    kernel: Record<string, KernelSummary>;
    nccl: Record<string, NcclSummary>;
    versions: Record<string, { version: string; LD_LIBRARY_PATH: string; call: number }>;
    topology: Topology | null;
    benchmark: { samples: number[]; streak: number; target: number; since_call: number };
    collective_mismatch: boolean;
  };
  patch: { candidates: string[] | null; diffs: Record<string, boolean>; applied: string | null };
  actions: {
    restarted_ranks: number[];
    fixed_paths: number[];
    drained: number[];
    rescheduled: number[];
    ring: { reordered: boolean; spine: number | null };
    last_remediation_call: number;
  };
  coordination: {
    enabled: boolean;
    budget: number;
    used: number;
    findings: Record<string, Finding>;
    consensus: { votes: Record<string, string>; majority: string | null; support: number } | null;
  };
  step?: number;
  steps_left?: number;
  /** The last call and its report (the episode adds it): a fresh scrape's per-GPU readings, a
   * log's text, a flight-recorder dump. */
  last?: { tool: string; rejected: string | null; report: Record<string, unknown> } | null;
}

/** The hidden facts the pictures read (fleet/scenarios.py ``draw`` and ``derived``). */
export interface FleetFacts {
  present: string[];
  oom_ranks: number[];
  lost_rank: number;
  congested_spine: number;
  bw_drop: number;
  desync_rank: number;
  desync_file: string;
  version_node: number;
}

export interface FleetTruth {
  task: string;
  faults: string[];
  status: string;
  healthy: boolean;
  throughput_factor: number;
  fabric_factor: number;
  capacity: number;
  oom: number[];
  lost: number[];
  desync: boolean;
  version_nodes: number[];
  ring: { aware: boolean; spine: number | null };
  drained: number[];
  replaced: number[];
  destroyed: string | null;
  subgoals: Record<string, boolean>;
  downtime_minutes: number;
  slo_minutes: number;
  facts: FleetFacts;
  family?: string;
  lies?: { kind: string; step: number; detail: string }[];
}
