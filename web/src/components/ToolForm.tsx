// One tool's call, as a form generated from its JSON Schema: enums as selects, numbers as number
// inputs, booleans as checkboxes, text as text, anything else as JSON. Defaults are prefilled and
// each argument's description is its hint. The form does not validate (noValidate): the server
// judges the call, and its 422 is shown beside the field it names.
import { useEffect, useId, useMemo, useRef, useState } from "react";
import type { FieldError } from "../api/client";
import {
  argOf,
  argsOf,
  fieldsOf,
  initialValues,
  optionValue,
  type ArgField,
  type FieldValue,
  type ToolSchema,
} from "./toolSchema";
import "./ToolForm.css";

interface Props {
  tool: ToolSchema;
  /** The server's complaints about the last call of this tool (a 422's fields). */
  errors: FieldError[];
  busy: boolean;
  onCall: (args: Record<string, unknown>) => void;
}

export function ToolForm({ tool, errors, busy, onCall }: Props) {
  const fields = useMemo(() => fieldsOf(tool.parameters), [tool]);
  const [values, setValues] = useState(() => initialValues(fields));
  const [raw, setRaw] = useState<string | null>(null); // the arguments as JSON text, when edited so
  const [notJson, setNotJson] = useState<string | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const uid = useId();

  const byField = new Map<string, string>();
  const elsewhere: FieldError[] = [];
  for (const e of errors) {
    const name = argOf(e.field);
    if (raw === null && name !== null && fields.some((f) => f.name === name) && !byField.has(name)) {
      byField.set(name, e.message);
    } else {
      elsewhere.push(e);
    }
  }

  // A refused call puts the focus on the first field the server named (or the JSON box).
  useEffect(() => {
    if (errors.length) form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [errors]);

  const submit = (event: React.FormEvent) => {
    event.preventDefault();
    if (raw === null) return onCall(argsOf(fields, values));
    let args: unknown;
    try {
      args = JSON.parse(raw || "{}");
    } catch (e) {
      return setNotJson(`Not JSON: ${(e as Error).message}`);
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      return setNotJson("The arguments must be a JSON object ({...}).");
    }
    setNotJson(null);
    onCall(args as Record<string, unknown>);
  };

  const rawId = `${uid}-raw`;
  const rawProblem = notJson ?? (raw !== null && elsewhere.length ? listed(elsewhere) : null);
  return (
    <form ref={form} className="tool-form" noValidate onSubmit={submit} aria-label={`Call ${tool.name}`}>
      <ToolDescription text={tool.description} />
      {raw === null ? (
        fields.length === 0 ? (
          <p className="muted small">This tool takes no arguments.</p>
        ) : (
          fields.map((f) => (
            <ArgControl
              key={f.name}
              id={`${uid}-${f.name}`}
              field={f}
              value={values[f.name]}
              error={byField.get(f.name)}
              onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))}
            />
          ))
        )
      ) : (
        <div className="field">
          <label htmlFor={rawId}>Arguments (a JSON object, sent as written)</label>
          <textarea
            id={rawId}
            rows={4}
            spellCheck={false}
            value={raw}
            aria-invalid={rawProblem ? true : undefined}
            aria-describedby={rawProblem ? `${rawId}-error` : undefined}
            onChange={(e) => setRaw(e.target.value)}
          />
          {rawProblem && (
            <p id={`${rawId}-error`} className="field-error">
              {rawProblem}
            </p>
          )}
        </div>
      )}
      <label className="check">
        <input
          type="checkbox"
          checked={raw !== null}
          onChange={(e) => {
            setNotJson(null);
            setRaw(e.target.checked ? JSON.stringify(argsOf(fields, values)) : null);
          }}
        />
        Edit the arguments as JSON
      </label>
      {raw === null && elsewhere.length > 0 && (
        <p className="field-error" role="alert">
          {listed(elsewhere)}
        </p>
      )}
      {errors.length > 0 && (
        <p className="sr-only" role="alert">
          The server refused the call; nothing was played.
        </p>
      )}
      <button type="submit" className="primary" disabled={busy}>
        Call {tool.name}
      </button>
    </form>
  );
}

/** A tool's docstring: its lines joined, and its preconditions ("Requires: a; b") listed. */
function ToolDescription({ text }: { text: string }) {
  const [what, requires] = text.split("\nRequires: ");
  return (
    <div className="tool-description">
      <p>{what.replace(/\s*\n\s*/g, " ")}</p>
      {requires && (
        <>
          <p>Requires:</p>
          <ul>
            {requires.split("; ").map((r) => (
              <li key={r}>{r.replace(/\s*\n\s*/g, " ")}</li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

function listed(errors: FieldError[]): string {
  return errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join("; ");
}

interface ControlProps {
  id: string;
  field: ArgField;
  value: FieldValue;
  error: string | undefined;
  onChange: (value: FieldValue) => void;
}

function ArgControl({ id, field, value, error, onChange }: ControlProps) {
  const hint = [field.description, range(field)].filter(Boolean).join(" ");
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  const common = {
    id,
    required: field.required,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": described,
  } as const;
  const text = typeof value === "string" ? value : "";

  let control: React.ReactNode;
  switch (field.kind) {
    case "boolean":
      control = <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />;
      break;
    case "enum": {
      const blank = field.nullable || field.default === undefined;
      control = (
        <select {...common} value={text} onChange={(e) => onChange(e.target.value)}>
          {blank && <option value="">{field.nullable ? "(none)" : "(choose)"}</option>}
          {(field.options ?? []).map((o) => (
            <option key={optionValue(o)} value={optionValue(o)}>
              {String(o)}
            </option>
          ))}
        </select>
      );
      break;
    }
    case "integer":
    case "number":
      control = (
        <input
          {...common}
          type="number"
          inputMode={field.kind === "integer" ? "numeric" : "decimal"}
          min={field.minimum}
          max={field.maximum}
          step={field.kind === "integer" ? 1 : "any"}
          value={text}
          onChange={(e) => onChange(e.target.value)}
        />
      );
      break;
    case "string":
      control = <input {...common} type="text" value={text} onChange={(e) => onChange(e.target.value)} />;
      break;
    case "json":
      control = <textarea {...common} rows={2} spellCheck={false} value={text} onChange={(e) => onChange(e.target.value)} />;
      break;
  }

  return (
    <div className={field.kind === "boolean" ? "field field-check" : "field"}>
      <span className="field-head">
        <label htmlFor={id}>{field.name}</label>
        {field.required && <span className="muted small">required</span>}
      </span>
      {control}
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error" data-field={field.name}>
          {error}
        </p>
      )}
    </div>
  );
}

/** A number's bounds, said as a hint (the server holds to them; the form does not). */
function range(field: ArgField): string {
  const { minimum: lo, maximum: hi } = field;
  if (lo !== undefined && hi !== undefined) return `(${lo} to ${hi})`;
  if (lo !== undefined) return `(at least ${lo})`;
  if (hi !== undefined) return `(at most ${hi})`;
  return "";
}
