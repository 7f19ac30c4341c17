import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { Schemas } from "../../api/client";
import { Ended } from "./Ended";
import type { View } from "./session";

const check = vi.hoisted(() => ({ current: {} as Partial<Schemas["ReplayCheck"]> }));
vi.mock("./session", () => ({ useReplayCheck: () => ({ data: check.current, error: null }) }));
vi.mock("../../api/hooks", () => ({ useOutcomeKind: () => () => "unfinished" }));

const view = {
  id: "s1",
  env: "release",
  seed: 2658650504400048,
  family: "stale_health",
  verdict: {
    accepted: false,
    outcome: "incomplete",
    failed: ["fresh_health_evidence"],
    invariants: [
      { name: "schema_compatible", held: true, reason: "schema v1 serves every live version" },
      { name: "fresh_health_evidence", held: false, reason: "no health check after the last change" },
    ],
  },
} as unknown as View;

describe("Ended", () => {
  it("lists the failed invariants first and marks the family as truth", () => {
    check.current = { match: true, first_difference: null };
    render(<Ended view={view} record={undefined} recordError={null} seedChosen={false} />);
    const rows = screen.getAllByRole("row").slice(1);
    expect(rows.map((r) => r.getAttribute("data-invariant"))).toEqual(["fresh_health_evidence", "schema_compatible"]);
    expect(within(rows[0]).getByText("✗ failed")).toBeTruthy();
    expect(screen.getByTestId("family").closest("[data-truth]")).not.toBeNull();
    expect(screen.getByTestId("seed").textContent).toBe("seed 2658650504400048 (drawn by the server)");
    expect(screen.getByTestId("replay").textContent).toContain("✓");
  });

  it("names the step and the field where a replay first differs", () => {
    check.current = {
      match: false,
      first_difference: { step: 2, field: "report", recorded: { status: "ok" }, replayed: { status: "timeout" } },
    };
    render(<Ended view={view} record={undefined} recordError={null} seedChosen />);
    const badge = screen.getByTestId("replay");
    expect(badge.getAttribute("data-match")).toBe("false");
    expect(badge.textContent).toBe("✗ Replay differs at step 2, field report.");
  });
});
