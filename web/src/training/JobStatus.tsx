// A training job's status in words and a mark (colour is never the only sign): live ones blue,
// succeeded calm, failed or lost red, stopped grey.
const LOOK: Record<string, [string, string]> = {
  queued: ["live", "◷"],
  running: ["live", "▶"],
  stopping: ["live", "■"],
  succeeded: ["ok", "✓"],
  failed: ["bad", "✗"],
  lost: ["bad", "?"],
  stopped: ["over", "■"],
};

export const LIVE_STATUSES = ["queued", "running", "stopping"];

export function JobStatus({ status }: { status: string }) {
  const [tone, mark] = LOOK[status] ?? ["over", "·"];
  return (
    <span className={`job-status job-${tone}`} data-job-status={status}>
      <span aria-hidden="true">{mark}</span> {status}
    </span>
  );
}
