// The inputs of a trainer's config, built from its JSON Schema: each field labelled, with its
// bounds and the schema's description as help, and the server's complaint (a 422) beside it.
// The main fields come first; the rest wait in a disclosure that opens when one of them is wrong.
import type { Field, Values } from "./schema";

export interface FieldHints {
  /** A closed list of choices (a select). */
  choices?: (field: Field) => string[] | undefined;
  /** Suggestions for a free text field (a datalist). */
  suggestions?: (field: Field) => string[] | undefined;
  /** A bound of the server's tighter than the schema's (its step caps). */
  max?: (field: Field) => number | undefined;
}

function bounds(field: Field, max: number | undefined): string {
  const parts = [];
  if (field.min !== undefined) parts.push(`${field.exclusive ? ">" : "≥"} ${field.min}`);
  if (max !== undefined) parts.push(`${field.exclusive && max === field.max ? "<" : "≤"} ${max.toLocaleString("en")}`);
  return parts.join(", ");
}

function Input({
  field,
  id,
  value,
  onChange,
  hints,
  described,
  invalid,
}: {
  field: Field;
  id: string;
  value: string | boolean;
  onChange: (value: string | boolean) => void;
  hints: FieldHints;
  described: string;
  invalid: boolean;
}) {
  const common = { id, name: field.path, "aria-describedby": described, "aria-invalid": invalid || undefined };
  if (field.type === "boolean") {
    return <input type="checkbox" {...common} checked={Boolean(value)} onChange={(e) => onChange(e.target.checked)} />;
  }
  const choices = field.options ?? hints.choices?.(field);
  if (choices) {
    return (
      <select {...common} value={String(value)} onChange={(e) => onChange(e.target.value)}>
        {field.nullable && <option value="">none</option>}
        {choices.map((c) => (
          <option key={c}>{c}</option>
        ))}
      </select>
    );
  }
  const suggestions = hints.suggestions?.(field);
  const numeric = field.type === "integer" || field.type === "number";
  return (
    <>
      <input
        {...common}
        type={numeric ? "number" : "text"}
        inputMode={numeric ? "decimal" : undefined}
        step={field.type === "integer" ? 1 : numeric ? "any" : undefined}
        min={numeric && !field.exclusive ? field.min : undefined}
        max={numeric ? (hints.max?.(field) ?? (field.exclusive ? undefined : field.max)) : undefined}
        placeholder={field.hasDefault ? undefined : field.nullable ? "none" : "the trainer's default"}
        value={String(value)}
        onChange={(e) => onChange(e.target.value)}
        list={suggestions ? `${id}-list` : undefined}
        autoComplete="off"
      />
      {suggestions && (
        <datalist id={`${id}-list`}>
          {suggestions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
      )}
    </>
  );
}

function FieldRow(props: {
  field: Field;
  idPrefix: string;
  values: Values;
  setValue: (path: string, value: string | boolean) => void;
  errors: Record<string, string>;
  hints: FieldHints;
}) {
  const { field, idPrefix, values, setValue, errors, hints } = props;
  const id = `${idPrefix}-${field.path.replaceAll(".", "-")}`;
  const error = errors[field.path];
  const limit = bounds(field, hints.max?.(field) ?? field.max);
  // The description's first paragraph, without reStructuredText's ``literal`` marks.
  const about = field.description?.split("\n\n")[0].replaceAll("\n", " ").replaceAll("``", "");
  const help = [about, limit && `(${limit})`].filter(Boolean).join(" ");
  const described = `${id}-help${error ? ` ${id}-error` : ""}`;
  const input = (
    <Input
      field={field}
      id={id}
      value={values[field.path] ?? ""}
      onChange={(v) => setValue(field.path, v)}
      hints={hints}
      described={described}
      invalid={Boolean(error)}
    />
  );
  return (
    <div className={`field field-${field.type}`} data-field={field.path}>
      {field.type === "boolean" ? (
        <label className="check" htmlFor={id}>
          {input}
          {field.label}
        </label>
      ) : (
        <>
          <label htmlFor={id}>{field.label}</label>
          {input}
        </>
      )}
      <span id={`${id}-help`} className="help">
        {help}
      </span>
      {error && (
        <span id={`${id}-error`} className="field-error">
          {error}
        </span>
      )}
    </div>
  );
}

export function SchemaForm({
  fields,
  primary,
  values,
  setValue,
  errors,
  hints,
  idPrefix,
}: {
  fields: Field[];
  /** The paths shown first; the others are under "More settings". */
  primary: string[];
  values: Values;
  setValue: (path: string, value: string | boolean) => void;
  errors: Record<string, string>;
  hints: FieldHints;
  idPrefix: string;
}) {
  const first = fields.filter((f) => primary.includes(f.path));
  const rest = fields.filter((f) => !primary.includes(f.path));
  const row = (f: Field) => (
    <FieldRow key={f.path} field={f} idPrefix={idPrefix} values={values} setValue={setValue} errors={errors} hints={hints} />
  );
  const restWrong = rest.some((f) => errors[f.path]);
  return (
    <>
      <div className="fields">{first.map(row)}</div>
      {rest.length > 0 && (
        // Keyed on whether a hidden field is wrong: a complaint about one opens the disclosure.
        <details key={restWrong ? "wrong" : "ok"} open={restWrong || undefined} className="more-fields">
          <summary>More settings ({rest.length})</summary>
          <div className="fields">{rest.map(row)}</div>
        </details>
      )}
    </>
  );
}
