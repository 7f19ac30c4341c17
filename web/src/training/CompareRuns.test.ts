import { describe, expect, it } from "vitest";
import { diff, flatten } from "./CompareRuns";

describe("diff", () => {
  it("lists every setting of either config and marks the ones that differ", () => {
    const a = { seed: 1, net_arch: [64, 64], lora: { r: 16, alpha: 32 } };
    const b = { seed: 2, net_arch: [64, 64], lora: { r: 8, alpha: 32 }, extra: true };
    expect(flatten(a)).toEqual({ seed: 1, net_arch: [64, 64], "lora.r": 16, "lora.alpha": 32 });
    expect(diff(a, b)).toEqual([
      { key: "extra", a: undefined, b: true, differs: true },
      { key: "lora.alpha", a: 32, b: 32, differs: false },
      { key: "lora.r", a: 16, b: 8, differs: true },
      { key: "net_arch", a: [64, 64], b: [64, 64], differs: false },
      { key: "seed", a: 1, b: 2, differs: true },
    ]);
  });
});
