import { describe, expect, it } from "vitest";
import { changedPaths, disagreements, flatten, showValue, summarise } from "./fields";

describe("reported beside true, field by field", () => {
  it("flattens nested values to dotted paths, plain lists as one leaf", () => {
    const fields = flatten({ health: { green: { status: "ok" }, blue: null }, violated: ["S2"], lies: [{ kind: "x" }], empty: {} });
    expect([...fields]).toEqual([
      ["health.green.status", "ok"],
      ["health.blue", null],
      ["violated", ["S2"]],
      ["lies.0.kind", "x"],
      ["empty", {}],
    ]);
  });

  it("finds what a step changed: everything at the first step", () => {
    const before = flatten({ schema: 1, changed_at: { green: 0 }, violated: ["S1"] });
    const after = flatten({ schema: 2, changed_at: { green: 0 }, violated: ["S1"], corrupted: false });
    expect([...changedPaths(before, after)]).toEqual(["schema", "corrupted"]);
    expect(changedPaths(null, after).size).toBe(after.size);
  });

  it("flags only fields that report and truth both name, with other values", () => {
    const reported = flatten({ status: "ok", schema: 1, operation: "migrate" });
    const truth = flatten({ schema: 2, status: "ok" });
    expect([...disagreements(reported, truth)]).toEqual(["schema"]);
  });

  it("shows leaves as short text", () => {
    expect(showValue("ok")).toBe("ok");
    expect(showValue(0.5)).toBe("0.5");
    expect(showValue(null)).toBe("null");
    expect(showValue(["S2"])).toBe('["S2"]');
    expect(summarise(flatten({ a: 1, b: { c: "x" } }))).toBe("a=1 · b.c=x");
    expect(summarise(flatten({ a: 1, b: 2 }), ["b"])).toBe("b=2");
  });
});
