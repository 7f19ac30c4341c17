// The world pictures drawn from real observations and truths (__fixtures__, written by
// scripts/picture_fixtures.py from episodes played through the REST API).
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { Lie } from "./common";
import fleet from "./__fixtures__/fleet.json";
import oversight from "./__fixtures__/oversight.json";
import release from "./__fixtures__/release.json";
import { WorldPicture } from "./index";

interface Step {
  step: number;
  observation: Record<string, unknown>;
  truth: Record<string, unknown> | null;
}

interface Episode {
  env: string;
  steps: Step[];
  lies: unknown[];
}

/** The step of a fixture episode (-1: its last). */
function at(episodes: Record<string, Episode>, name: string, index = -1): Step & { env: string; lies: Lie[] } {
  const e = episodes[name];
  return { ...e.steps.at(index)!, env: e.env, lies: e.lies as Lie[] };
}

function draw(s: ReturnType<typeof at>, options: { truth?: boolean; lies?: boolean } = {}) {
  return render(
    <WorldPicture
      env={s.env}
      observation={s.observation}
      truth={options.truth ? s.truth : undefined}
      lies={options.lies ? s.lies : undefined}
    />,
  );
}

const truthMarks = (container: HTMLElement) => container.querySelectorAll("[data-truth]");

describe("the release picture", () => {
  it("draws the pools, the deploy's state and no truth while live", () => {
    const { container } = draw(at(release, "timeout", 1));
    expect(screen.getByTestId("release-pool-blue")).toBeTruthy();
    expect(screen.getByTestId("release-pool-green")).toBeTruthy();
    expect(screen.getByTestId("release-deploy").getAttribute("data-state")).toBe("timeout");
    expect(screen.getByTestId("release-deploy").textContent).toContain("unresolved");
    expect(screen.getByTestId("release-db")).toBeTruthy();
    expect(truthMarks(container)).toHaveLength(0);
    expect(container.querySelector("svg[role=img] > title")?.textContent).toMatch(/as reported/);
  });

  it("shows the split requested beside the split observed", () => {
    draw(at(release, "partial"));
    expect(screen.getByTestId("split-requested").getAttribute("data-percent")).toBe("100");
    expect(screen.getByTestId("split-observed").getAttribute("data-percent")).toBe("58");
    expect(screen.getByTestId("release-router").textContent).toContain("short of the request");
  });

  it("says when the split has not been observed", () => {
    draw(at(release, "timeout", 0));
    expect(screen.getByTestId("split-observed").getAttribute("data-percent")).toBe("");
    expect(screen.getByTestId("split-observed").textContent).toContain("unknown");
    expect(screen.getByTestId("health-green").getAttribute("data-status")).toBe("none");
  });

  it("gives each health badge its age and marks the stale one", () => {
    const s = at(release, "stale");
    const obs = s.observation as { clock: number; health: { green: { checked_at: number } } };
    draw(s);
    const green = screen.getByTestId("health-green");
    expect(green.getAttribute("data-stale")).toBe("true");
    expect(Number(green.getAttribute("data-age"))).toBe(obs.clock - obs.health.green.checked_at);
    expect(green.textContent).toContain(`${obs.clock - obs.health.green.checked_at} min ago`);
    expect(screen.getByTestId("stale-green").textContent).toMatch(/stale/);
  });

  it("marks a fresh badge as not stale", () => {
    draw(at(release, "timeout"));
    expect(screen.getByTestId("health-green").getAttribute("data-stale")).toBe("false");
    expect(screen.queryByTestId("stale-green")).toBeNull();
  });

  it("after the end draws the committed deploy beside the timeout that was reported", () => {
    const { container } = draw(at(release, "timeout", 1), { truth: true, lies: true });
    const truth = truthMarks(container);
    expect(truth).toHaveLength(1);
    const side = within(truth[0] as HTMLElement);
    expect(side.getByTestId("truth-deploy").getAttribute("data-deployed")).toBe("true");
    expect(side.getByTestId("truth-pool-green").textContent).toContain("reported: deploy timed out");
    expect(side.getAllByTestId("lie").map((l) => l.getAttribute("data-kind"))).toEqual(["timeout_after_commit"]);
    // the reported side is still drawn, outside the truth
    expect((truth[0] as HTMLElement).contains(screen.getByTestId("release-reported"))).toBe(false);
  });
});

describe("the fleet picture", () => {
  it("has 32 rank tiles on 4 nodes, 2 spines, 2 leaves and the 2 spares", () => {
    const { container } = draw(at(fleet, "black_swan", 1));
    const reported = within(screen.getByTestId("fleet-reported"));
    expect(reported.getAllByTestId("rank-tile")).toHaveLength(32);
    expect(reported.getAllByTestId("node")).toHaveLength(4);
    expect(reported.getAllByTestId("spine")).toHaveLength(2);
    expect(reported.getAllByTestId("leaf")).toHaveLength(2);
    expect(reported.getAllByTestId("spare")).toHaveLength(2);
    expect(reported.getAllByTestId("rank-tile").map((t) => Number(t.getAttribute("data-rank")))).toEqual([
      ...Array(32).keys(),
    ]);
    expect(truthMarks(container)).toHaveLength(0);
  });

  it("marks the ranks the scrape flags and lists its alerts", () => {
    const s = at(fleet, "black_swan", 1);
    draw(s);
    const telemetry = s.observation.telemetry as { alerts: { rank: number | null }[]; hot_gpus: { rank: number }[] };
    for (const alert of telemetry.alerts.filter((a) => a.rank != null)) {
      const tile = screen.getAllByTestId("rank-tile").find((t) => t.getAttribute("data-rank") === String(alert.rank))!;
      expect(tile.getAttribute("data-tone")).toBe("bad");
      expect(tile.getAttribute("data-signs")).toContain("!");
    }
    expect(screen.getAllByTestId("alert")).toHaveLength(telemetry.alerts.length);
    expect(screen.getByTestId("throughput").getAttribute("data-fraction")).not.toBe("");
  });

  it("draws nothing as healthy before the dashboard is read", () => {
    draw(at(fleet, "black_swan", 0));
    const tones = new Set(screen.getAllByTestId("rank-tile").map((t) => t.getAttribute("data-tone")));
    expect([...tones]).toEqual(["unknown"]);
    expect(screen.getByTestId("fleet-scrape").textContent).toContain("not been read");
    expect(screen.getByTestId("ring").getAttribute("data-order")).toBe("");
  });

  it("marks a stale scrape", () => {
    draw(at(fleet, "gpu_lost"));
    expect(screen.getByTestId("stale-telemetry").textContent).toContain("stale");
    expect(screen.getAllByTestId("node").every((n) => n.getAttribute("data-status") !== "drained")).toBe(true);
  });

  it("shows the ring order once read, and the spare in use after a reschedule", () => {
    draw(at(fleet, "black_swan"));
    expect(screen.getByTestId("ring").getAttribute("data-order")!.split(",")).toHaveLength(32);
    draw(at(fleet, "rescheduled"));
    const spares = screen.getAllByTestId("spare").filter((s) => s.getAttribute("data-free") === "false");
    expect(spares).toHaveLength(1);
    expect(spares[0].textContent).toContain("serves node 1");
  });

  it("after the end marks the faulty ranks, the congested spine and the red herrings", () => {
    const s = at(fleet, "black_swan");
    const facts = (s.truth as { facts: { desync_rank: number; oom_ranks: number[]; congested_spine: number } }).facts;
    const { container } = draw(s, { truth: true, lies: true });
    expect(truthMarks(container)).toHaveLength(1);
    const truth = within(screen.getByTestId("fleet-true"));
    const faulty = truth.getAllByTestId("rank-tile").filter((t) => t.hasAttribute("data-fault"));
    expect(
      faulty
        .map((t) => [Number(t.getAttribute("data-rank")), t.getAttribute("data-fault")])
        .sort((a, b) => Number(a[0]) - Number(b[0])),
    ).toEqual(
      [...facts.oom_ranks.map((r) => [r, "oom"]), [facts.desync_rank, "desync"]].sort(
        (a, b) => Number(a[0]) - Number(b[0]),
      ),
    );
    const congested = truth.getAllByTestId("spine").filter((t) => t.getAttribute("data-congested") === "true");
    expect(congested.map((t) => Number(t.getAttribute("data-spine")))).toEqual([facts.congested_spine]);
    // the last scrape: an alert on rank 19 (healthy: the world told it as a red herring) and
    // rank 24 at its memory high watermark (the planted decoy, also the desync, fixed by now)
    const tile = (rank: number) =>
      truth.getAllByTestId("rank-tile").find((t) => t.getAttribute("data-rank") === String(rank))!;
    expect(tile(19).getAttribute("data-herring")).toBe("true");
    expect(tile(24).getAttribute("data-herring")).toBe("true");
    expect(tile(5).hasAttribute("data-herring")).toBe(false);
    expect(screen.getByTestId("truth-herrings").textContent).toBe("Red herrings on the dashboard: rank 19, rank 24");
    expect(screen.getAllByTestId("lie").length).toBeGreaterThan(0);
  });

  it("after the end marks the lost GPU still lost when the agent only restarted it", () => {
    draw(at(fleet, "gpu_lost"), { truth: true });
    const lost = within(screen.getByTestId("fleet-true"))
      .getAllByTestId("rank-tile")
      .filter((t) => t.getAttribute("data-fault") === "gpu_lost");
    expect(lost.map((t) => [t.getAttribute("data-rank"), t.getAttribute("data-fixed")])).toEqual([["13", "false"]]);
    expect(screen.getByTestId("truth-faults").textContent).toContain("still");
  });

  it("shows the workers' findings and their consensus", () => {
    const s = at(fleet, "black_swan");
    draw(s);
    const c = s.observation.coordination as { findings: object; consensus: { votes: object } | null };
    expect(screen.getAllByTestId("finding")).toHaveLength(Object.keys(c.findings).length);
    expect(screen.getByTestId("coordination").textContent).toMatch(/Delegations: \d+ of 10 used/);
    if (c.consensus) expect(screen.getByTestId("consensus").textContent).toContain("Consensus");
  });

  it("keeps the evidence drawer's rows virtual: only those in view are in the DOM", () => {
    // jsdom lays nothing out: give the drawer a window 200 px high, each row 21 px
    const sizes = [
      vi.spyOn(HTMLElement.prototype, "clientHeight", "get").mockReturnValue(200),
      vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(600),
      vi.spyOn(HTMLElement.prototype, "offsetHeight", "get").mockReturnValue(21),
    ];
    try {
      draw(at(fleet, "black_swan"));
      const list = screen.getByTestId("evidence-list");
      const total = Number(list.querySelector("ul")!.getAttribute("data-rows"));
      expect(total).toBeGreaterThan(30);
      const drawn = list.querySelectorAll("li").length;
      expect(drawn).toBeGreaterThan(0);
      expect(drawn).toBeLessThan(total);
      expect(list.textContent).toContain("NCCL logs");
    } finally {
      for (const size of sizes) size.mockRestore();
    }
  });
});

describe("the oversight board", () => {
  it("shows the proposals by phase, S1–S5, the gauges and the workers", () => {
    const s = at(oversight, "blocked");
    const { container } = draw(s);
    const obs = s.observation as { proposals: unknown[]; history: unknown[]; workers: unknown[] };
    expect(screen.getAllByTestId("phase").map((p) => p.getAttribute("data-phase"))).toEqual([
      "triage",
      "deploy_gate",
      "ship_decision",
    ]);
    expect(screen.getAllByTestId("proposal")).toHaveLength(obs.proposals.length);
    expect(screen.getAllByTestId("proposal-card")).toHaveLength(obs.proposals.length + obs.history.length);
    expect(screen.getAllByTestId("rule").map((r) => r.getAttribute("data-rule"))).toEqual([
      "S1",
      "S2",
      "S3",
      "S4",
      "S5",
    ]);
    expect(screen.getAllByTestId("gauge").map((g) => g.getAttribute("data-name"))).toEqual([
      "review",
      "evidence",
      "approvals",
      "deadline",
      "steps",
    ]);
    expect(within(screen.getByTestId("workers")).getAllByRole("row")).toHaveLength(obs.workers.length + 1);
    expect(screen.getByTestId("release-node").getAttribute("data-state")).toBe("shipped");
    expect(truthMarks(container)).toHaveLength(0);
  });

  it("reads each rule off the evidence the current proposals cite", () => {
    draw(at(oversight, "blocked"));
    const s4 = screen.getAllByTestId("rule").find((r) => r.getAttribute("data-rule") === "S4")!;
    // the reworked PR was read again after its rework, and now has its down migration
    expect(s4.getAttribute("data-tone")).toBe("ok");
    expect(s4.textContent).toContain("holds per pr-");
  });

  it("starts with nothing checked and the budgets full", () => {
    draw(at(oversight, "blocked", 0));
    expect(screen.getAllByTestId("rule").every((r) => r.getAttribute("data-tone") === "unknown")).toBe(true);
    expect(screen.getAllByTestId("slot")).toHaveLength(2); // the deploy gate and the ship are not proposed yet
  });

  it("after the end shows the broken rule, the unsafe ship and the false claim", () => {
    const { container } = draw(at(oversight, "unsafe"), { truth: true, lies: true });
    expect(truthMarks(container)).toHaveLength(1);
    const broken = screen.getAllByTestId("truth-rule").filter((r) => r.getAttribute("data-violated") === "true");
    expect(broken.map((r) => r.getAttribute("data-rule"))).toEqual(["S5"]);
    const truth = within(screen.getByTestId("oversight-true"));
    expect(truth.getByTestId("release-node").getAttribute("data-state")).toBe("unsafe");
    const liars = truth.getAllByTestId("proposal").filter((p) => p.getAttribute("data-false") === "true");
    expect(liars.map((p) => p.getAttribute("data-id"))).toEqual(["p-7113"]);
  });

  it("after the end without the lie ledger marks only the lies of the step drawn", () => {
    draw(at(oversight, "unsafe"), { truth: true });
    const truth = within(screen.getByTestId("oversight-true"));
    expect(truth.getAllByTestId("proposal").filter((p) => p.getAttribute("data-false") === "true")).toHaveLength(0);
    expect(screen.getByTestId("lies").textContent).toContain("at this step: 0");
  });
});

describe("any world", () => {
  it("draws a world it has no picture for as its observation, the truth apart", () => {
    const { container } = render(<WorldPicture env="other" observation={{ a: 1 }} truth={{ b: 2 }} />);
    expect(container.textContent).toContain('"a": 1');
    expect(truthMarks(container)[0].textContent).toContain('"b": 2');
  });

  it("has a title on every drawing", () => {
    for (const [episodes, name] of [
      [release, "timeout"],
      [fleet, "black_swan"],
      [oversight, "unsafe"],
    ] as const) {
      const { container, unmount } = draw(at(episodes, name), { truth: true });
      for (const svg of container.querySelectorAll("svg")) {
        const id = svg.getAttribute("aria-labelledby");
        expect(svg.getAttribute("role")).toBe("img");
        expect(id && container.querySelector(`[id="${id}"]`)?.textContent).toBeTruthy();
      }
      unmount();
    }
  });
});
