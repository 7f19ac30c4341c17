import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { SummaryCard } from "./SummaryCard";
import type { PolicySummary } from "./summary";
import { position } from "./Whisker";

const SUMMARY: PolicySummary = {
  policy: "oracle",
  scenario: "mixed",
  n: 12,
  seeds: 12,
  outcomes: {
    deployed_verified: { value: 0.4166666666666667, low: 0.1932603136587566, high: 0.6804886874504502 },
    unsafe: { value: 0, low: 0, high: 0.24249400665524085 },
  },
  pass_hat_k: { "1": 1 },
  pass_at_k: { "1": 1 },
  deterministic: false,
  return: { value: 8.6, low: 7.4, high: 9.9 },
  components: {},
  steps: 9.75,
  tokens: 0,
  downtime_cost: null,
  lies: null,
};

describe("SummaryCard", () => {
  it("draws each outcome's own interval, coloured by what the outcome means", () => {
    const kinds: Record<string, "safe" | "harmful"> = { deployed_verified: "safe", unsafe: "harmful" };
    const { container } = render(<SummaryCard summary={SUMMARY} env="release" kind={(_, o) => kinds[o]} returnDomain={[0, 10]} />);
    const whisker = container.querySelector('[data-whisker="deployed_verified"]')!;
    expect(whisker.getAttribute("data-low")).toBe("0.1932603136587566");
    expect(whisker.getAttribute("data-high")).toBe("0.6804886874504502");
    expect(whisker.getAttribute("class")).toContain("whisker-safe");
    expect(whisker.querySelector(".whisker-range")!.getAttribute("x1")).toBe(`${0.1932603136587566 * 100}%`);
    expect(container.querySelector('[data-whisker="unsafe"]')!.getAttribute("class")).toContain("whisker-harmful");
    expect(container.querySelector('[data-whisker="return"] .whisker-range')!.getAttribute("x2")).toBe("99%");
    expect(screen.getByText("41.7%")).toBeTruthy();
    expect(screen.getByText("19.3% – 68.0%")).toBeTruthy();
  });

  it("keeps a whisker on its track", () => {
    expect(position(-1, [0, 1])).toBe(0);
    expect(position(0.25, [0, 1])).toBe(25);
    expect(position(12, [0, 10])).toBe(100);
  });
});
