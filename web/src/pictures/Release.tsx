// The release world: a web frontend, the router, the API on two pools (v1 live on blue, the v2
// candidate on green) and the database. The reported picture draws the agent's view (each
// health report with its age, marked stale when it predates the pool's last change; the split
// requested beside the split observed); the true one draws the hidden state in the same places.
import { memo, type ReactNode } from "react";
import { Badge, Box, Line, Pair, STALE_ICON, Svg, TONE_ICON, minutes, percent, type Lie, type Tone } from "./common";
import { LiesTold, type StepLie } from "./Lies";

type Pool = "blue" | "green";

interface HealthReport {
  target: string;
  status: "healthy" | "unhealthy" | "unknown";
  checked_at: number;
  restarts?: number;
  error_rate?: number;
  message?: string;
}

interface VerifyReport {
  passed: boolean;
  failures: number;
  transactions: number;
  green_percent: number;
  checked_at: number;
}

/** The release world's observation (``Release.observe``). */
export interface ReleaseObservation {
  clock: number;
  minutes_left: number;
  staged: boolean;
  deploy: "none" | "ok" | "timeout" | "committed" | "absent";
  migration: "none" | "ok" | "no_ack" | "applied" | "absent";
  schema: number;
  requested_green_percent: number;
  observed_green_percent: number | null;
  rolled_back: boolean;
  last_change: Record<Pool, number>;
  traffic_changed_at: number | null;
  health: Record<Pool, HealthReport | null>;
  verify: VerifyReport | null;
  unresolved: string[];
  retryable: string | null;
  step?: number;
}

/** The release world's truth (``Release.truth``), as a record's event holds it. */
export interface ReleaseTruth {
  green_deployed: boolean;
  green_restarts: number;
  storm_until: number;
  green_share: number;
  green_healthy: boolean;
  schema: number;
  schema_writes: number;
  corrupted: boolean;
  changed_at: Record<Pool, number>;
  downtime: number;
  v2_shippable: boolean;
  family?: string;
  lies?: StepLie[];
}

/** An error rate above this is a warning sign even in a healthy report (``ERROR_RATE_ALARM``). */
const ERROR_RATE_ALARM = 0.01;

/** What the agent knows of the v2 deploy, in words (and whether that is good). */
function deployState(obs: ReleaseObservation): [Tone, string] {
  switch (obs.deploy) {
    case "none":
      return ["unknown", obs.staged ? "v2 staged, not deployed" : "v2 not staged"];
    case "ok":
      return ["ok", "v2 deployed"];
    case "timeout":
      return ["unknown", "deploy timed out: unresolved"];
    case "committed":
      return ["ok", "v2 committed (inspected)"];
    case "absent":
      return ["bad", "v2 absent (inspected)"];
  }
}

/** The migration as the agent knows it: a word and a note, for the database's narrow box. */
const MIGRATION: Record<ReleaseObservation["migration"], [Tone, string, string]> = {
  none: ["unknown", "not migrated", ""],
  ok: ["ok", "migrated", ""],
  no_ack: ["unknown", "no ack", "unresolved"],
  applied: ["ok", "migrated", "(inspected)"],
  absent: ["bad", "not migrated", "(inspected)"],
};

// The geometry, fixed: frontend → router → the two pools → the database. Body text is 11
// units (about 6.6 a character), so every line below fits its box.
const W = 720;
const H = 296;
const FRONT = { x: 8, y: 118, w: 92, h: 60 };
const ROUTER = { x: 124, y: 84, w: 176, h: 128 };
const POOL: Record<Pool, { x: number; y: number; w: number; h: number }> = {
  blue: { x: 330, y: 8, w: 226, h: 128 },
  green: { x: 330, y: 150, w: 226, h: 140 },
};
const DB = { x: 586, y: 98, w: 126, h: 100 };

export const ReleasePicture = memo(function ReleasePicture({
  observation,
  truth,
  lies,
}: {
  observation: ReleaseObservation;
  truth?: ReleaseTruth | null;
  lies?: Lie[] | null;
}) {
  return (
    <Pair
      reported={<Reported obs={observation} />}
      truth={
        truth && (
          <>
            <True obs={observation} truth={truth} />
            <LiesTold lies={lies} atStep={truth.lies} step={observation.step} />
          </>
        )
      }
    />
  );
});

function Reported({ obs }: { obs: ReleaseObservation }) {
  const requested = obs.requested_green_percent;
  const observed = obs.observed_green_percent;
  const green = (observed ?? requested) / 100;
  return (
    <>
      <Svg title={`Release as reported at ${minutes(obs.clock)}`} width={W} height={H} testid="release-reported">
        <Wires green={green} unobserved={observed == null} />
        <Frontend />
        <Box {...ROUTER} title="Router" testid="release-router">
          <Split row={1} label="requested" green={requested} testid="split-requested" />
          <Split row={3.3} label="observed" green={observed} testid="split-observed" />
          {observed != null && observed !== requested && (
            <Line x={ROUTER.x} y={ROUTER.y} row={6} tone="bad">
              {TONE_ICON.bad} short of the request
            </Line>
          )}
        </Box>
        {(["blue", "green"] as const).map((pool) => (
          <PoolBox
            key={pool}
            pool={pool}
            obs={obs}
            share={pool === "green" ? green : 1 - green}
            basis={observed == null ? "requested" : "observed"}
          />
        ))}
        <Database schema={obs.schema} migration={MIGRATION[obs.migration]} />
      </Svg>
      <dl className="pic-facts" data-testid="release-facts">
        <div>
          <dt>Clock</dt>
          <dd>
            {minutes(obs.clock)} ({minutes(obs.minutes_left)} left)
          </dd>
        </div>
        <div>
          <dt>Verify</dt>
          <dd data-testid="release-verify">{verifyText(obs)}</dd>
        </div>
        <div>
          <dt>Unresolved</dt>
          <dd>{obs.unresolved.length ? obs.unresolved.join(", ") : "none"}</dd>
        </div>
        <div>
          <dt>Rolled back</dt>
          <dd>{obs.rolled_back ? "yes, all traffic to blue" : "no"}</dd>
        </div>
      </dl>
    </>
  );
}

function verifyText(obs: ReleaseObservation): string {
  const v = obs.verify;
  if (!v) return "not run";
  const age = obs.clock - v.checked_at;
  const stale = obs.traffic_changed_at != null && v.checked_at < obs.traffic_changed_at;
  const verdict = v.passed ? `${TONE_ICON.ok} passed` : `${TONE_ICON.bad} ${v.failures} of ${v.transactions} failed`;
  const when = `${minutes(age)} ago${stale ? " (before the last traffic change)" : ""}`;
  return `${verdict} at ${v.green_percent}% green, ${when}`;
}

/** The edges: the frontend into the router, the router into each pool (as wide as its share;
 * dashed while the split is unobserved), each pool into the database. */
function Wires({ green, unobserved }: { green: number; unobserved: boolean }) {
  const rx = ROUTER.x + ROUTER.w;
  const ry = ROUTER.y + ROUTER.h / 2;
  return (
    <g className="pic-wires" aria-hidden="true">
      <line x1={FRONT.x + FRONT.w} y1={ry} x2={ROUTER.x} y2={ry} strokeWidth={6} />
      {(["blue", "green"] as const).map((pool) => {
        const p = POOL[pool];
        const share = pool === "green" ? green : 1 - green;
        return (
          <g key={pool}>
            <path
              d={`M${rx},${ry} C${rx + 20},${ry} ${p.x - 20},${p.y + p.h / 2} ${p.x},${p.y + p.h / 2}`}
              strokeWidth={1 + 9 * share}
              strokeDasharray={unobserved ? "6 4" : undefined}
              className={share > 0 ? undefined : "pic-wire-idle"}
            />
            <line x1={p.x + p.w} y1={p.y + p.h / 2} x2={DB.x} y2={DB.y + DB.h / 2} strokeWidth={2} />
          </g>
        );
      })}
    </g>
  );
}

function Frontend() {
  return (
    <Box {...FRONT} title="Frontend">
      <Line x={FRONT.x} y={FRONT.y} row={1}>
        web
      </Line>
    </Box>
  );
}

/** One split as a bar (blue share, then green share) with its figure in words. */
function Split({
  row,
  label,
  green,
  testid,
  tone,
}: {
  row: number;
  label: string;
  green: number | null;
  testid: string;
  tone?: Tone;
}) {
  const x = ROUTER.x + 8;
  const y = ROUTER.y + 17 + 16 * row;
  const w = ROUTER.w - 16;
  const g = green == null ? null : Math.max(0, Math.min(100, green));
  return (
    <g data-testid={testid} data-percent={g ?? ""}>
      <text x={x} y={y} className={tone ? `pic-text-${tone}` : undefined}>
        {label} {g == null ? "unknown" : `${g}% green`}
      </text>
      {g == null ? (
        <rect className="pic-split-unknown" x={x} y={y + 5} width={w} height={10} />
      ) : (
        <>
          <rect className="pic-split-blue" x={x} y={y + 5} width={(w * (100 - g)) / 100} height={10} />
          <rect className="pic-split-green" x={x + (w * (100 - g)) / 100} y={y + 5} width={(w * g) / 100} height={10} />
        </>
      )}
    </g>
  );
}

/** A pool: its version and deploy, its last health report, and its share of traffic (the one
 * last observed, else the one requested). */
function PoolBox({
  pool,
  obs,
  share,
  basis,
}: {
  pool: Pool;
  obs: ReleaseObservation;
  share: number;
  basis: "observed" | "requested";
}) {
  const p = POOL[pool];
  const report = obs.health[pool];
  const [deployTone, deployText] = deployState(obs);
  const changedAt = obs.last_change[pool];
  return (
    <Box
      {...p}
      title={pool === "blue" ? "API · blue pool · v1" : "API · green pool · v2"}
      testid={`release-pool-${pool}`}
    >
      {pool === "green" ? (
        <Line x={p.x} y={p.y} row={1} tone={deployTone}>
          <tspan data-testid="release-deploy" data-state={obs.deploy}>
            {TONE_ICON[deployTone]} {deployText}
          </tspan>
        </Line>
      ) : (
        <Line x={p.x} y={p.y} row={1}>
          v1 {obs.rolled_back ? "(rolled back to)" : "(live)"}
        </Line>
      )}
      <HealthBadge x={p.x + 8} y={p.y + 38} pool={pool} report={report} clock={obs.clock} changedAt={changedAt} />
      {report && report.checked_at < changedAt && (
        <Line x={p.x} y={p.y} row={3} tone="unknown">
          <tspan data-testid={`stale-${pool}`}>
            {STALE_ICON} stale (changed at {minutes(changedAt)})
          </tspan>
        </Line>
      )}
      <Line x={p.x} y={p.y} row={4}>
        restarts (10 min): {report?.restarts ?? "—"}
      </Line>
      <ErrorRate x={p.x} y={p.y} rate={report?.error_rate} />
      <Line x={p.x} y={p.y} row={6}>
        traffic {percent(share)} ({basis})
      </Line>
    </Box>
  );
}

function ErrorRate({ x, y, rate }: { x: number; y: number; rate?: number }) {
  if (rate == null) {
    return (
      <Line x={x} y={y} row={5}>
        error rate: —
      </Line>
    );
  }
  const high = rate > ERROR_RATE_ALARM;
  return (
    <Line x={x} y={y} row={5} tone={high ? "bad" : undefined}>
      error rate {percent(rate, 2)}
      {high ? ` ${TONE_ICON.bad} over ${percent(ERROR_RATE_ALARM)}` : ""}
    </Line>
  );
}

/** A pool's last health report: its status, its age, and the stale mark when it was gathered
 * before the pool last changed (a cached answer describes the pool as it was). */
function HealthBadge({
  x,
  y,
  pool,
  report,
  clock,
  changedAt,
}: {
  x: number;
  y: number;
  pool: Pool;
  report: HealthReport | null;
  clock: number;
  changedAt: number;
}) {
  if (!report) {
    return (
      <Badge x={x} y={y} tone="unknown" text="not probed" testid={`health-${pool}`} data={{ "data-status": "none" }} />
    );
  }
  const tone: Tone = report.status === "healthy" ? "ok" : report.status === "unhealthy" ? "bad" : "unknown";
  const age = clock - report.checked_at;
  const stale = report.checked_at < changedAt;
  return (
    <Badge
      x={x}
      y={y}
      tone={tone}
      stale={stale}
      text={`${report.status} · ${minutes(age)} ago`}
      testid={`health-${pool}`}
      data={{ "data-status": report.status, "data-age": age }}
    />
  );
}

function Database({
  schema,
  migration,
  children,
}: {
  schema: number;
  migration: [Tone, string, string];
  children?: ReactNode;
}) {
  const [tone, word, note] = migration;
  return (
    <Box {...DB} title="Database" testid="release-db">
      <Line x={DB.x} y={DB.y} row={1}>
        <tspan data-testid="release-schema">schema v{schema}</tspan>
      </Line>
      <Line x={DB.x} y={DB.y} row={2} tone={tone}>
        {TONE_ICON[tone]} {word}
      </Line>
      {note && (
        <Line x={DB.x} y={DB.y} row={3} tone={tone}>
          {note}
        </Line>
      )}
      {children}
    </Box>
  );
}

/** The hidden state in the same places: the committed deploy, the router's true split, whether
 * green truly serves, the schema's writes. A true fact that contradicts the report is marked. */
function True({ obs, truth }: { obs: ReleaseObservation; truth: ReleaseTruth }) {
  const share = Math.round(100 * truth.green_share);
  const reportedDeployed = obs.deploy === "ok" || obs.deploy === "committed";
  const deployDiffers = truth.green_deployed !== reportedDeployed;
  const g = POOL.green;
  const b = POOL.blue;
  return (
    <>
      <Svg title="Release: the true state" width={W} height={H} testid="release-true">
        <Wires green={truth.green_share} unobserved={false} />
        <Frontend />
        <Box {...ROUTER} title="Router (true)" testid="truth-router">
          <Split
            row={1}
            label="true"
            green={share}
            testid="truth-split"
            tone={share !== obs.requested_green_percent ? "bad" : undefined}
          />
          {share !== obs.requested_green_percent && (
            <Line x={ROUTER.x} y={ROUTER.y} row={4} tone="bad">
              {TONE_ICON.bad} ≠ the {obs.requested_green_percent}% requested
            </Line>
          )}
        </Box>
        <Box {...b} title="API · blue pool · v1" testid="truth-pool-blue">
          <Line x={b.x} y={b.y} row={1} tone="ok">
            {TONE_ICON.ok} v1 serves (it never fails)
          </Line>
          <Line x={b.x} y={b.y} row={2}>
            traffic {percent(1 - truth.green_share)}
          </Line>
        </Box>
        <Box {...g} title="API · green pool · v2" testid="truth-pool-green" tone={deployDiffers ? "bad" : undefined}>
          <Line x={g.x} y={g.y} row={1} tone={truth.green_deployed ? "ok" : "unknown"}>
            <tspan data-testid="truth-deploy" data-deployed={truth.green_deployed}>
              {truth.green_deployed ? `${TONE_ICON.ok} v2 committed` : `${TONE_ICON.unknown} v2 not deployed`}
            </tspan>
          </Line>
          {deployDiffers && (
            <Line x={g.x} y={g.y} row={2} tone="bad">
              {TONE_ICON.bad} reported: {deployState(obs)[1]}
            </Line>
          )}
          <Line x={g.x} y={g.y} row={3} tone={!truth.green_deployed ? undefined : truth.green_healthy ? "ok" : "bad"}>
            <tspan data-testid="truth-green-health" data-healthy={truth.green_healthy}>
              {greenHealth(truth, obs.clock)}
            </tspan>
          </Line>
          <Line x={g.x} y={g.y} row={4}>
            restarts in all: {truth.green_restarts}
            {truth.storm_until > 0 ? ` · storm to ${minutes(truth.storm_until)}` : ""}
          </Line>
          <Line x={g.x} y={g.y} row={5}>
            traffic {percent(truth.green_share)}
          </Line>
          <Line x={g.x} y={g.y} row={6} tone={truth.v2_shippable ? "ok" : "bad"}>
            {truth.v2_shippable ? `${TONE_ICON.ok} v2 shippable` : `${TONE_ICON.bad} v2 not shippable`}
          </Line>
        </Box>
        <Database
          schema={truth.schema}
          migration={
            truth.corrupted
              ? ["bad", "corrupted", ""]
              : truth.schema_writes
                ? ["ok", "data intact", ""]
                : ["unknown", "not migrated", ""]
          }
        >
          <Line x={DB.x} y={DB.y} row={3}>
            <tspan data-testid="truth-schema-writes">written {truth.schema_writes}×</tspan>
          </Line>
        </Database>
      </Svg>
      <dl className="pic-facts">
        <div>
          <dt>Family</dt>
          <dd data-testid="truth-family">{truth.family ?? "—"}</dd>
        </div>
        <div>
          <dt>Downtime</dt>
          <dd>{truth.downtime} share-minutes of traffic on a v2 that could not serve it</dd>
        </div>
      </dl>
    </>
  );
}

/** Whether green truly serves, and if not, why (the first reason ``Release._green_ok`` finds). */
function greenHealth(truth: ReleaseTruth, clock: number): string {
  if (!truth.green_deployed) return "nothing to serve";
  if (truth.green_healthy) return `${TONE_ICON.ok} truly serving`;
  if (!truth.v2_shippable) return `${TONE_ICON.bad} failing: v2 is faulty`;
  if (truth.schema !== 2) return `${TONE_ICON.bad} failing: schema v1`;
  if (clock < truth.storm_until) return `${TONE_ICON.bad} failing: restart storm`;
  return `${TONE_ICON.bad} truly failing`;
}
