// A trainer's config schema (JSON Schema, as pydantic writes it) turned into form fields, and the
// form's text back into a config. Nested models ($ref into $defs, like LoRA's settings) become
// fields with dotted paths ("lora.r"); a field of a type the form has no input for is JSON text.

export interface JsonSchema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  $ref?: string;
  properties?: Record<string, JsonSchema>;
  $defs?: Record<string, JsonSchema>;
}

export type FieldType = "string" | "integer" | "number" | "boolean" | "list" | "choice" | "json";

export interface Field {
  /** Dotted path in the config: "total_timesteps", "lora.r". */
  path: string;
  label: string;
  type: FieldType;
  /** For lists: the items' type. */
  items?: "integer" | "number" | "string";
  /** Empty means null (the schema allows null). */
  nullable: boolean;
  default: unknown;
  /** Whether the schema gives a default (a missing one is the server's own, unseen here). */
  hasDefault: boolean;
  description?: string;
  options?: string[];
  min?: number;
  max?: number;
  /** The bounds are exclusive (the server says so in its 422 if crossed). */
  exclusive?: boolean;
}

/** The form's state: each field's text (or a checkbox's state), by path. */
export type Values = Record<string, string | boolean>;

function resolve(node: JsonSchema, root: JsonSchema): JsonSchema {
  if (!node.$ref) return node;
  const name = node.$ref.replace(/^#\/\$defs\//, "");
  return { ...(root.$defs?.[name] ?? {}), ...node, $ref: undefined };
}

function typeOf(node: JsonSchema): Pick<Field, "type" | "items"> {
  if (node.enum) return { type: "choice" };
  const t = node.type;
  if (t === "string" || t === "integer" || t === "number" || t === "boolean") return { type: t };
  if (t === "array" && node.items?.type && ["integer", "number", "string"].includes(node.items.type)) {
    return { type: "list", items: node.items.type as Field["items"] };
  }
  return { type: "json" };
}

/** Every field of `schema`, in its order, nested models flattened under their name. */
export function fieldsOf(schema: JsonSchema, root: JsonSchema = schema, prefix = ""): Field[] {
  const out: Field[] = [];
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    let node = resolve(raw, root);
    const path = prefix + name;
    if (node.properties) {
      // "LoRA: R" rather than a bare "R" beside the trainer's own fields.
      out.push(...fieldsOf(node, root, `${path}.`).map((f) => ({ ...f, label: `${node.title ?? name}: ${f.label}` })));
      continue;
    }
    const variants = node.anyOf?.map((v) => resolve(v, root));
    const nullable = Boolean(variants?.some((v) => v.type === "null"));
    const concrete = variants?.filter((v) => v.type !== "null");
    if (concrete?.length === 1) node = { ...concrete[0], ...node, anyOf: undefined, type: concrete[0].type };
    const bounds = node.exclusiveMinimum ?? node.exclusiveMaximum;
    out.push({
      path,
      label: node.title ?? name,
      ...typeOf(node),
      nullable,
      default: node.default,
      hasDefault: "default" in node,
      description: node.description,
      options: node.enum?.map(String),
      min: node.minimum ?? node.exclusiveMinimum,
      max: node.maximum ?? node.exclusiveMaximum,
      exclusive: bounds !== undefined || undefined,
    });
  }
  return out;
}

/** A value as the form's text. */
function text(field: Field, value: unknown): string | boolean {
  if (field.type === "boolean") return Boolean(value);
  if (value == null) return "";
  if (field.type === "list") return (value as unknown[]).join(", ");
  if (field.type === "json") return JSON.stringify(value);
  return String(value);
}

/** Each field's default, as the form shows it. */
export function initialValues(fields: Field[]): Values {
  return Object.fromEntries(fields.map((f) => [f.path, text(f, f.default)]));
}

function number(raw: string, integer: boolean): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n)) throw new Error("must be a number");
  if (integer && !Number.isInteger(n)) throw new Error("must be a whole number");
  return n;
}

function parse(field: Field, raw: string | boolean): unknown {
  if (field.type === "boolean") return Boolean(raw);
  const s = String(raw);
  switch (field.type) {
    case "integer":
    case "number":
      return number(s, field.type === "integer");
    case "list":
      return s
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean)
        .map((p) => (field.items === "string" ? p : number(p, field.items === "integer")));
    case "json":
      try {
        return JSON.parse(s);
      } catch {
        throw new Error("must be JSON");
      }
    default:
      return s;
  }
}

/** The config the form says, or what is wrong with it, by path. A field left empty is left out
 * (the server's default applies) unless it may be null, when it is null. */
export function configFrom(fields: Field[], values: Values): { config: Record<string, unknown>; errors: Record<string, string> } {
  const config: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const raw = values[field.path] ?? text(field, field.default);
    let value: unknown;
    if (raw === "") {
      if (!field.nullable) continue;
      value = null;
    } else {
      try {
        value = parse(field, raw);
      } catch (e) {
        errors[field.path] = (e as Error).message;
        continue;
      }
    }
    const parts = field.path.split(".");
    let at = config;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = value;
  }
  return { config, errors };
}

/** The field a server complaint names: "ppo.config.lora.r" → "lora.r" (null if not a config field). */
export function configPath(field: string): string | null {
  const at = field.indexOf("config.");
  return at < 0 ? null : field.slice(at + "config.".length);
}
