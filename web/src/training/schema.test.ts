import { describe, expect, it } from "vitest";
import { configFrom, configPath, fieldsOf, initialValues, type JsonSchema } from "./schema";

// A trimmed copy of what pydantic writes for GRPO's config (GET /api/training).
const SCHEMA: JsonSchema = {
  $defs: {
    LoRA: {
      properties: {
        r: { default: 16, minimum: 0, title: "R", type: "integer" },
        targets: { default: "all-linear", title: "Targets", type: "string" },
      },
      title: "LoRA",
      type: "object",
    },
  },
  properties: {
    env: { default: "release", title: "Env", type: "string" },
    steps: { default: 200, minimum: 1, title: "Steps", type: "integer" },
    learning_rate: { default: 1e-5, exclusiveMinimum: 0, title: "Learning Rate", type: "number" },
    thinking: { default: false, title: "Thinking", type: "boolean" },
    max_tool_calls: { anyOf: [{ minimum: 1, type: "integer" }, { type: "null" }], default: null, title: "Max Tool Calls" },
    net_arch: { items: { type: "integer" }, title: "Net Arch", type: "array" },
    lora: { $ref: "#/$defs/LoRA" },
  },
  type: "object",
};

describe("fieldsOf", () => {
  const fields = fieldsOf(SCHEMA);

  it("flattens nested models under their name and keeps the schema's order", () => {
    expect(fields.map((f) => f.path)).toEqual([
      "env",
      "steps",
      "learning_rate",
      "thinking",
      "max_tool_calls",
      "net_arch",
      "lora.r",
      "lora.targets",
    ]);
    expect(fields.find((f) => f.path === "lora.r")).toMatchObject({ type: "integer", label: "LoRA: R", min: 0, default: 16 });
  });

  it("reads a nullable integer, an exclusive bound and a list", () => {
    expect(fields.find((f) => f.path === "max_tool_calls")).toMatchObject({ type: "integer", nullable: true, min: 1 });
    expect(fields.find((f) => f.path === "learning_rate")).toMatchObject({ type: "number", min: 0, exclusive: true });
    expect(fields.find((f) => f.path === "net_arch")).toMatchObject({ type: "list", items: "integer", hasDefault: false });
  });
});

describe("configFrom", () => {
  const fields = fieldsOf(SCHEMA);

  it("turns the defaults back into the same config", () => {
    const { config, errors } = configFrom(fields, initialValues(fields));
    expect(errors).toEqual({});
    expect(config).toEqual({
      env: "release",
      steps: 200,
      learning_rate: 1e-5,
      thinking: false,
      max_tool_calls: null,
      lora: { r: 16, targets: "all-linear" },
    });
  });

  it("parses what was typed, lists included", () => {
    const values = { ...initialValues(fields), steps: "12", net_arch: "64, 64", "lora.r": "0", thinking: true };
    expect(configFrom(fields, values).config).toMatchObject({ steps: 12, net_arch: [64, 64], lora: { r: 0 }, thinking: true });
  });

  it("names each field it cannot read", () => {
    const values = { ...initialValues(fields), steps: "1.5", learning_rate: "fast", net_arch: "64, x" };
    expect(configFrom(fields, values).errors).toEqual({
      steps: "must be a whole number",
      learning_rate: "must be a number",
      net_arch: "must be a number",
    });
  });
});

describe("configPath", () => {
  it("finds the config field a 422 names", () => {
    expect(configPath("ppo.config.total_timesteps")).toBe("total_timesteps");
    expect(configPath("grpo.config.lora.r")).toBe("lora.r");
    expect(configPath("name")).toBeNull();
  });
});
