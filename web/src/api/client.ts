// The one way the workbench talks to the server: openapi-fetch, typed by the server's own
// OpenAPI document (schema.d.ts is generated; `make test` fails when it drifts).
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type EnvInfo = Schemas["EnvInfo"];
export type OutcomeKind = "safe" | "harmful" | "unfinished";

const TOKEN_KEY = "opsgym.token";

/** Fired when the token is set or cleared (the header's button and live streams follow it). */
export const TOKEN_CHANGED = "opsgym:token-changed";

/** The operator's token: in sessionStorage only (never localStorage, never a URL). */
export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => {
    sessionStorage.setItem(TOKEN_KEY, value);
    window.dispatchEvent(new Event(TOKEN_CHANGED));
  },
  clear: () => {
    sessionStorage.removeItem(TOKEN_KEY);
    window.dispatchEvent(new Event(TOKEN_CHANGED));
  },
};

/** Fired when the server answers 401: the token dialog opens. */
export const UNAUTHORISED = "opsgym:unauthorised";

const auth: Middleware = {
  onRequest({ request }) {
    const t = token.get();
    if (t) request.headers.set("Authorization", `Bearer ${t}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) window.dispatchEvent(new Event(UNAUTHORISED));
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: "" });
api.use(auth);

/** Headers for a request made outside openapi-fetch (downloads, the event stream). */
export function authHeaders(): Record<string, string> {
  const t = token.get();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** One field's complaint from a 422: where (``body.args.target``) and what. */
export interface FieldError {
  field: string;
  message: string;
}

/** An error answer from the server, with what it said. */
export class ApiError extends Error {
  readonly status: number;
  readonly fields: FieldError[];
  constructor(status: number, detail: unknown) {
    const fields = fieldErrors(detail);
    const text =
      typeof detail === "string"
        ? detail
        : fields.length
          ? fields.map((f) => (f.field ? `${f.field}: ${f.message}` : f.message)).join("; ")
          : `HTTP ${status}`;
    super(text);
    this.status = status;
    this.fields = fields;
  }
}

function fieldErrors(detail: unknown): FieldError[] {
  if (!Array.isArray(detail)) return [];
  return detail.map((e) => {
    const item = e as { loc?: unknown[]; msg?: string };
    const loc = (item.loc ?? []).filter((p) => p !== "body").map(String);
    return { field: loc.join("."), message: item.msg ?? String(e) };
  });
}

/** The data of an openapi-fetch answer, or an ApiError (for react-query). */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    const detail = (result.error as { detail?: unknown } | undefined)?.detail ?? result.error;
    throw new ApiError(result.response.status, detail);
  }
  return result.data as T;
}
