import { describe, expect, it } from "vitest";
import { formatCall, formatNumber, formatSigned } from "./format";
import type { Lie, RecordedEvent } from "./queries";
import { clampStep, lieMarks, stepSummaries } from "./steps";

function event(step: number, report: Record<string, unknown>, truth: Record<string, unknown>, reward: Record<string, number>): RecordedEvent {
  return { step, tool: "migrate", args: {}, tokens: 0, rejected: null, report, reward, clock: step, done: false, truth, hash: "" };
}

function lie(told_at: number, settled_at: number | null, status: Lie["status"]): Lie {
  return { kind: "lost_ack", detail: "", told_at, told_by: "migrate", status, settled_at, settled_by: null };
}

describe("the timeline's steps", () => {
  const events = [
    event(1, { status: "ok" }, { schema: 1, green: { healthy: false } }, { step: -0.1, progress: 0.5 }),
    event(2, { status: "timeout", schema: 1 }, { schema: 2, green: { healthy: false } }, { step: -0.1 }),
    event(3, { status: "ok" }, { schema: 2, green: { healthy: false } }, {}),
  ];
  const summary = stepSummaries(events);

  it("puts the report beside the truth the call changed", () => {
    expect(summary(0).trueLine).toBe("schema=1 · green.healthy=false");
    expect([...summary(0).added]).toEqual(["schema", "green.healthy"]);
    const second = summary(1);
    expect(second.reportedLine).toBe("status=timeout · schema=1");
    expect(second.trueLine).toBe("schema=2");
    expect([...second.added]).toEqual([]);
    expect([...second.disagree]).toEqual(["schema"]);
    expect(summary(2).trueLine).toBe("no change");
  });

  it("adds each step's reward over its components, and keeps what it made", () => {
    expect(summary(0).reward).toBeCloseTo(0.4);
    expect(summary(2).reward).toBe(0);
    expect(summary(1)).toBe(summary(1));
  });

  it("marks lies where told and where settled", () => {
    const marks = lieMarks([lie(2, 3, "reconciled"), lie(0, 1, "trusted"), lie(2, null, "open")]);
    expect(marks.told.get(2)?.map((l) => l.status)).toEqual(["reconciled", "open"]);
    expect(marks.told.get(0)).toHaveLength(1);
    expect(marks.settled.get(3)?.[0].status).toBe("reconciled");
    expect(marks.settled.get(1)?.[0].status).toBe("trusted");
    expect(marks.settled.has(2)).toBe(false);
  });

  it("reads the selected step from the URL within the record", () => {
    expect(clampStep(null, 8)).toBe(1);
    expect(clampStep("7", 8)).toBe(7);
    expect(clampStep("70", 8)).toBe(8);
    expect(clampStep("0", 8)).toBe(1);
    expect(clampStep("seven", 8)).toBe(1);
  });
});

describe("numbers and calls", () => {
  it("rounds away float noise and signs rewards", () => {
    expect(formatNumber(-499.00000000000006)).toBe("-499");
    expect(formatNumber(-0.0001)).toBe("0");
    expect(formatSigned(0.5)).toBe("+0.5");
    expect(formatSigned(-0.1)).toBe("-0.1");
    expect(formatSigned(0)).toBe("0");
  });

  it("writes a call as the agent made it", () => {
    expect(formatCall("inspect", { target: "migration" })).toBe('inspect(target="migration")');
    expect(formatCall("verify", {})).toBe("verify()");
    expect(formatCall(null, null)).toBe("null()");
  });
});
