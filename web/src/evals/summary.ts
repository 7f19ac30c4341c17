// An evaluation's summary as the server stores it (opsgym.evaluation.summary.summarise): one
// entry per policy × scenario, every outcome with its own rate and Wilson interval. The OpenAPI
// document leaves `aggregates` an open object, so its shape is written down here.
import type { Schemas } from "../api/client";

export type Evaluation = Schemas["EvaluationView"];
export type EvaluationBrief = Schemas["EvaluationBrief"];

/** A rate or a mean with its 95% interval. */
export interface Interval {
  value: number;
  low: number;
  high: number;
}

export interface LieCounts {
  told: number;
  trusted: number;
  reconciled: number;
}

export interface LieSummary {
  /** Lies told per episode. */
  told: number;
  /** Lies the policy acted on per episode. */
  trusted: number;
  reconciled: number;
  /** Share of the lies told that were trusted, with its Wilson interval. */
  trusted_share: Interval;
  by_kind: Record<string, LieCounts>;
}

export interface PolicySummary {
  policy: string;
  scenario: string;
  n: number;
  seeds: number;
  outcomes: Record<string, Interval>;
  pass_hat_k: Record<string, number>;
  pass_at_k: Record<string, number>;
  deterministic: boolean;
  return: Interval;
  components: Record<string, number>;
  steps: number;
  tokens: number;
  downtime_cost: number | null;
  lies: LieSummary | null;
}

/** The summary entries of an evaluation (none while its job has stored nothing). */
export function summaryOf(evaluation: Pick<Evaluation, "aggregates">): PolicySummary[] {
  const summary = evaluation.aggregates?.summary;
  return Array.isArray(summary) ? (summary as PolicySummary[]) : [];
}

/** The config an evaluation was made with (harness.EvalConfig, stored as a plain object). */
export interface EvaluationConfig {
  env: string;
  policies: string[];
  scenarios: string[];
  split: string;
  episodes: number;
  trials: number;
  seeds?: string;
}

export function configOf(evaluation: { config?: Record<string, unknown> | null }): EvaluationConfig | null {
  const c = evaluation.config;
  return c && typeof c.env === "string" && Array.isArray(c.policies) ? (c as unknown as EvaluationConfig) : null;
}

export const LIVE_JOB = ["queued", "running"];

/** A share as a percentage: 0.41666 → "41.7%". */
export function percent(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/** The lowest and highest bound of a set of intervals, widened to a non-empty range. */
export function span(intervals: Interval[]): [number, number] {
  if (intervals.length === 0) return [0, 1];
  let low = Math.min(...intervals.map((i) => i.low));
  let high = Math.max(...intervals.map((i) => i.high));
  if (high - low < 1e-9) {
    low -= 1;
    high += 1;
  }
  return [low, high];
}
