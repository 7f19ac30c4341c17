import { ApiError } from "../api/client";

/** A failed request, said plainly (with the field when the server named one). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = error instanceof Error ? error.message : String(error);
  const status = error instanceof ApiError ? ` (HTTP ${error.status})` : "";
  return (
    <p role="alert" className="error">
      {text}
      {status}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}
