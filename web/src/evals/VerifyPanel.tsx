// Verify an evaluation by replay (as `opsgym eval --verify`): every stored episode played again
// from its calls must give its record back, and the episodes' root must be the one sealed.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Link } from "wouter";
import { api, unwrap, type Schemas } from "../api/client";
import { ErrorNote } from "../components/ErrorNote";

type VerifyJob = Schemas["VerifyJob"];

interface Problem {
  episode?: number;
  policy?: string;
  seed?: number;
  kind?: string;
  step?: number;
  field?: string;
}

export function VerifyPanel({ name, verify, running }: { name: string; verify: VerifyJob | null; running: boolean }) {
  const client = useQueryClient();
  const start = useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/evaluations/{name}/verify", { params: { path: { name } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["evaluation", name] }),
  });
  const busy = verify?.status === "queued" || verify?.status === "running";
  return (
    <section aria-labelledby="verify-title">
      <h2 id="verify-title">Verification</h2>
      <div className="row">
        <button type="button" onClick={() => start.mutate()} disabled={busy || running || start.isPending}>
          Verify by replay
        </button>
        <span className="small muted">Replays every stored episode from its calls and checks the sealed root.</span>
      </div>
      <ErrorNote error={start.error} />
      <div aria-live="polite" data-testid="verify">
        {busy && <p>Verifying ({verify?.status})…</p>}
        {verify?.status === "failed" && <p className="error">The verification failed: {verify.error}</p>}
        {verify?.status === "done" && verify.result && <Result result={verify.result} />}
      </div>
    </section>
  );
}

function Result({ result }: { result: Schemas["Verification"] }) {
  const ok = result.exit_code === 0;
  const sealed = result.sealed_root == null ? "never sealed" : result.root === result.sealed_root ? "matches" : "differs";
  return (
    <div className={ok ? "verdict verdict-ok" : "verdict verdict-bad"} data-exit-code={result.exit_code}>
      <p>
        <strong>
          <span aria-hidden="true">{ok ? "✓ " : "✗ "}</span>
          {result.matched} of {result.total} episodes replay to their records
        </strong>{" "}
        (exit code {result.exit_code}).
      </p>
      <p className="small">
        Root of the stored episodes <code className="hash">{result.root ?? "none"}</code>: {sealed}
        {sealed === "differs" && (
          <>
            {" "}
            the sealed root <code className="hash">{result.sealed_root}</code>
          </>
        )}
        .
      </p>
      {result.problems.length > 0 && (
        <ul className="problems">
          {(result.problems as Problem[]).map((p, i) => (
            <li key={i} data-problem-episode={p.episode}>
              {p.episode != null ? <Link href={`/episodes/${p.episode}`}>episode #{p.episode}</Link> : "the evaluation"}
              {p.policy && ` (${p.policy}, seed ${p.seed})`}: {p.kind ?? "difference"}
              {p.step != null && ` at step ${p.step}`}
              {p.field && `, field ${p.field}`}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
