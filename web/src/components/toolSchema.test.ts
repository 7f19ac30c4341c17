import { describe, expect, it } from "vitest";
import { argOf, argsOf, fieldsOf, initialValues, type JsonSchema } from "./toolSchema";

// Schemas as the server generates them (GET /api/envs: tools[].function.parameters).
const shiftTraffic: JsonSchema = {
  type: "object",
  properties: {
    percent: {
      anyOf: [{ type: "integer", minimum: 0, maximum: 100 }, { type: "null" }],
      default: null,
      description: "Share of traffic for green (v2), 0-100.",
    },
  },
};
const inspect: JsonSchema = {
  type: "object",
  properties: { target: { type: "string", enum: ["all", "deploy", "migration", "router"], default: "all" } },
};
const flightRecorder: JsonSchema = {
  type: "object",
  required: ["rank"],
  properties: {
    rank: { type: "integer", minimum: 0, maximum: 31 },
    last: { type: "integer", minimum: 1, maximum: 2000, default: 4 },
  },
};
const mixed: JsonSchema = {
  type: "object",
  properties: {
    pr_id: { anyOf: [{ type: "string" }, { type: "null" }], default: null },
    dry: { type: "boolean", default: true },
    tags: { type: "array" },
  },
};

describe("fieldsOf", () => {
  it("reads a nullable integer through its anyOf, with its bounds and hint", () => {
    expect(fieldsOf(shiftTraffic)).toEqual([
      {
        name: "percent",
        kind: "integer",
        required: false,
        nullable: true,
        description: "Share of traffic for green (v2), 0-100.",
        options: undefined,
        minimum: 0,
        maximum: 100,
        default: null,
      },
    ]);
  });

  it("makes an enum a choice, a boolean a switch and anything else JSON", () => {
    expect(fieldsOf(inspect)[0]).toMatchObject({ kind: "enum", options: ["all", "deploy", "migration", "router"] });
    expect(fieldsOf(mixed).map((f) => [f.name, f.kind, f.nullable])).toEqual([
      ["pr_id", "string", true],
      ["dry", "boolean", false],
      ["tags", "json", false],
    ]);
  });

  it("marks the required arguments", () => {
    expect(fieldsOf(flightRecorder).map((f) => [f.name, f.required])).toEqual([
      ["rank", true],
      ["last", false],
    ]);
  });

  it("is empty for a tool that takes no arguments", () => {
    expect(fieldsOf({ type: "object", properties: {} })).toEqual([]);
  });
});

describe("initialValues", () => {
  it("prefills each default and leaves the rest blank", () => {
    expect(initialValues(fieldsOf(inspect))).toEqual({ target: '"all"' });
    expect(initialValues(fieldsOf(flightRecorder))).toEqual({ rank: "", last: "4" });
    expect(initialValues(fieldsOf(mixed))).toEqual({ pr_id: "", dry: true, tags: "" });
  });
});

describe("argsOf", () => {
  it("leaves blanks out and reads numbers, enums and JSON", () => {
    const fields = [...fieldsOf(flightRecorder), ...fieldsOf(inspect), ...fieldsOf(mixed)];
    const args = argsOf(fields, { rank: "7", last: "", target: '"router"', pr_id: " ", dry: false, tags: "[1, 2]" });
    expect(args).toEqual({ rank: 7, target: "router", dry: false, tags: [1, 2] });
  });

  it("sends what the schema refuses as typed, for the server to name", () => {
    const fields = [...fieldsOf(shiftTraffic), ...fieldsOf(mixed)];
    expect(argsOf(fields, { percent: "150", dry: true, tags: "[1," })).toEqual({ percent: 150, dry: true, tags: "[1," });
    expect(argsOf(fieldsOf(shiftTraffic), { percent: "ten" })).toEqual({ percent: "ten" });
  });
});

describe("argOf", () => {
  it("names the argument a 422 points at", () => {
    expect(argOf("args.percent")).toBe("percent");
    expect(argOf("args.tags.0")).toBe("tags");
    expect(argOf("args")).toBeNull();
    expect(argOf("tool")).toBeNull();
  });
});
