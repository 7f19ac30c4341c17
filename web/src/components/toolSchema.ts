// A tool's argument form, read from its JSON Schema (`/api/envs` → tools[].function.parameters,
// generated on the server from the tool's pydantic model). The form never judges a value: what
// the user typed goes to the server as typed, and the server's 422 names the field, so the one
// place that decides what a tool accepts is the tool itself.
import type { EnvInfo } from "../api/client";

/** The part of JSON Schema the tools' argument models use. */
export interface JsonSchema {
  type?: string;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
}

/** A world's tool, as an OpenAI-style function schema names it. */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export type FieldKind = "enum" | "integer" | "number" | "boolean" | "string" | "json";

/** One argument of a tool, as a form control. */
export interface ArgField {
  name: string;
  kind: FieldKind;
  required: boolean;
  /** `null` is allowed (and is the default when left blank). */
  nullable: boolean;
  description?: string;
  /** The enum's values. */
  options?: unknown[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

/** What a control holds: text for every kind but booleans. */
export type FieldValue = string | boolean;

/** The tools of a world, from its description. */
export function toolsOf(world: EnvInfo): ToolSchema[] {
  return world.tools.flatMap((t) => {
    const fn = (t as { function?: Partial<ToolSchema> }).function;
    return fn && typeof fn.name === "string"
      ? [{ name: fn.name, description: fn.description ?? "", parameters: fn.parameters ?? {} }]
      : [];
  });
}

/** The form's fields, in the schema's order. */
export function fieldsOf(parameters: JsonSchema): ArgField[] {
  const required = new Set(parameters.required ?? []);
  return Object.entries(parameters.properties ?? {}).map(([name, prop]) => {
    // `X | None` is `anyOf: [X, {type: null}]`: the control is X's, and blank means null.
    const variants = prop.anyOf ?? [prop];
    const concrete = variants.filter((v) => v.type !== "null");
    const nullable = concrete.length < variants.length;
    const base = concrete.length === 1 ? concrete[0] : {};
    return {
      name,
      kind: kindOf(base),
      required: required.has(name),
      nullable,
      description: prop.description ?? base.description,
      options: base.enum,
      minimum: base.minimum,
      maximum: base.maximum,
      default: prop.default !== undefined ? prop.default : base.default,
    };
  });
}

function kindOf(schema: JsonSchema): FieldKind {
  if (schema.enum) return "enum";
  switch (schema.type) {
    case "integer":
    case "number":
    case "boolean":
    case "string":
      return schema.type;
    default:
      return "json"; // arrays, objects, unions: typed as JSON
  }
}

/** The controls' first values: each field's default, else blank. */
export function initialValues(fields: ArgField[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.map((f) => [f.name, initialValue(f)]));
}

function initialValue(field: ArgField): FieldValue {
  const d = field.default;
  if (field.kind === "boolean") return d === true;
  if (d === undefined || d === null) return "";
  if (field.kind === "enum") return optionValue(d);
  if (field.kind === "json") return JSON.stringify(d);
  return String(d);
}

/** An enum value as a `<select>`'s option value (its JSON, so that `1` and `"1"` differ). */
export function optionValue(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * The call's arguments from the controls. A blank control is left out (the tool's default, or
 * the server's "Field required"); anything else is sent as typed, even a value the schema
 * refuses (a number past the maximum, text that is not JSON): the server says what is wrong.
 */
export function argsOf(fields: ArgField[], values: Record<string, FieldValue>): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (typeof value === "boolean") {
      args[field.name] = value;
      continue;
    }
    if (value === undefined || value.trim() === "") continue;
    args[field.name] = parsed(field.kind, value);
  }
  return args;
}

function parsed(kind: FieldKind, text: string): unknown {
  switch (kind) {
    case "integer":
    case "number": {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case "enum":
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}

/** The field a server's 422 names inside the arguments (`args.node` → `node`), if any. */
export function argOf(field: string): string | null {
  const [head, name] = field.split(".");
  return head === "args" && name ? name : null;
}
