import { describe, expect, it } from "vitest";
import { extent, movingAverage, ordered, path, scale, short, ticks } from "./chart";

describe("ticks", () => {
  it("steps by 1, 2 or 5 times a power of ten", () => {
    expect(ticks(0, 4096, 5)).toEqual([0, 1000, 2000, 3000, 4000]);
    expect(ticks(-28, 10.3, 4)).toEqual([-20, -10, 0, 10]);
    expect(ticks(0, 1, 4)).toEqual([0, 0.5, 1]);
    expect(ticks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it("gives one tick for a flat range", () => {
    expect(ticks(3, 3)).toEqual([3]);
  });
});

describe("extent and scale", () => {
  it("widens a flat curve so it can be drawn", () => {
    expect(extent([[[0, 1], [10, 1]]])).toEqual({ x: [0, 10], y: [0.5, 1.5] });
    expect(extent([[]])).toBeNull();
  });

  it("maps a domain onto a range", () => {
    const x = scale([0, 10], [50, 150]);
    expect(x(0)).toBe(50);
    expect(x(5)).toBe(100);
    expect(path([[0, 0], [10, 1]], x, scale([0, 1], [100, 0]))).toBe("M50.0,100.0L150.0,0.0");
  });
});

describe("movingAverage", () => {
  it("averages each value with those before it", () => {
    expect(movingAverage([[1, 2], [2, 4], [3, 6], [4, 8]], 2)).toEqual([[1, 2], [2, 3], [3, 5], [4, 7]]);
  });
});

describe("short and ordered", () => {
  it("writes numbers briefly", () => {
    expect(short(4096)).toBe("4,096");
    expect(short(0.0003)).toBe("3.00e-4");
    expect(short(300000)).toBe("3.0e5");
  });

  it("puts the main curves first, the rest by name", () => {
    expect(ordered(["start_prob", "safe", "dev_return", "return", "a"])).toEqual(["return", "safe", "dev_return", "a", "start_prob"]);
  });
});
